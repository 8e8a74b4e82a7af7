//! Runs whose process died are not lost: a server resumes every `running` run whose lease
//! lapsed (its driver is gone), at start and whenever another server's lease on one lapses.

use crate::agents::Go;
use crate::state::AppState;
use agentry::{RunQuery, RunStatus, store::now_ms};
use std::collections::HashSet;
use std::time::Duration;

/// Looks for orphaned runs now, then every third of a lease, until the task is aborted.
pub(crate) async fn recover(state: AppState) {
    let every = (state.runtime.lease_duration() / 3).max(Duration::from_millis(200));
    let mut unknown_agents = HashSet::new();
    loop {
        if let Err(error) = adopt_orphans(&state, &mut unknown_agents).await {
            tracing::warn!(%error, "looking for runs to resume failed");
        }
        tokio::time::sleep(every).await;
    }
}

/// Resumes each top-level run that is `running` with no live driver and an agent served here.
async fn adopt_orphans(
    state: &AppState,
    unknown_agents: &mut HashSet<String>,
) -> Result<(), agentry::StoreError> {
    let now = now_ms();
    let orphans = state
        .store
        .list(&RunQuery::all().status(RunStatus::Running))
        .await?
        .into_iter()
        .filter(|r| r.parent_run_id.is_none() && r.driver_gone(now));
    for run in orphans {
        if state.hubs.get(&run.run_id).is_some_and(|h| !h.is_done()) {
            continue;
        }
        let Some(agent) = state.agents.get(&run.agent) else {
            if unknown_agents.insert(run.agent.clone()) {
                tracing::warn!(
                    run_id = run.run_id,
                    agent = run.agent,
                    "a run whose process died is not resumed here: its agent is not served"
                );
            }
            continue;
        };
        let base = state.store.last_event_seq(&run.run_id).await?;
        tracing::info!(run_id = run.run_id, "resuming a run whose process died");
        let resumed = state
            .launch(
                agent,
                &run.run_id,
                Go::Resume {
                    run_id: run.run_id.clone(),
                },
                base,
            )
            .await;
        if let Err(error) = resumed {
            tracing::warn!(
                run_id = run.run_id,
                error = error.message(),
                "a run whose process died could not be resumed"
            );
        }
    }
    Ok(())
}

/// At shutdown: the runs this server drives stop where they are and are left at their last
/// checkpoint, their leases released, for the next start (or another server) to resume.
pub(crate) async fn leave(state: &AppState) {
    let running = state.hubs.running();
    if running.is_empty() {
        return;
    }
    tracing::info!(
        runs = running.len(),
        "leaving the runs under way at their last checkpoint"
    );
    for (_, hub) in &running {
        hub.release();
    }
    for (run_id, hub) in running {
        let mut changed = hub.watch();
        let ended = async {
            while !hub.is_done() {
                if changed.changed().await.is_err() {
                    break;
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), ended)
            .await
            .is_err()
        {
            tracing::warn!(
                run_id,
                "a run did not stop within 10 s; its lease will lapse instead"
            );
        }
    }
}
