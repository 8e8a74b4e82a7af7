//! What every handler shares: the runtime, the store, the agents, the hubs of the runs this
//! process drives.

use crate::agents::{Go, ServedAgent};
use crate::error::ApiError;
use crate::hub::{Hubs, RunHub};
use agentry::{Redact, RunStore, Runtime, StoredRun};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a request waits for a run this process started to reach the store.
const FIRST_SAVE: Duration = Duration::from_secs(5);

/// The server's shared state (cheap to clone).
#[derive(Clone)]
pub(crate) struct AppState(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) runtime: Runtime,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) agents: BTreeMap<String, Arc<dyn ServedAgent>>,
    pub(crate) default_agent: String,
    pub(crate) hubs: Arc<Hubs>,
    pub(crate) redactor: Option<Arc<dyn Redact>>,
    /// Ends every event stream when the server shuts down.
    pub(crate) shutdown: CancellationToken,
    /// How often a stream of a run driven elsewhere looks for new events.
    pub(crate) poll: Duration,
    /// What every served run starts with.
    pub(crate) options: agentry::RunOptions,
    /// True when requests must carry a bearer token.
    pub(crate) token_required: bool,
    /// What ends a session for the hooks, when the server was given it.
    pub(crate) session_end: Option<crate::server::SessionEnd>,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The agent `name` names, or the default one.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Arc<dyn ServedAgent>, ApiError> {
        let name = name.unwrap_or(&self.default_agent);
        self.agents.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            ApiError::not_found(format!(
                "no agent `{name}` is served here; the agents are {}",
                known.join(", ")
            ))
        })
    }

    /// The stored run `run_id`, or 404. A run this process has just started and not yet
    /// checkpointed (a client that asks right after the start's answer) is waited for, up to
    /// [`FIRST_SAVE`].
    pub(crate) async fn load(&self, run_id: &str) -> Result<StoredRun, ApiError> {
        let deadline = tokio::time::Instant::now() + FIRST_SAVE;
        loop {
            if let Some(stored) = self.store.load(run_id).await? {
                return Ok(stored);
            }
            let starting = self.hubs.get(run_id).is_some_and(|h| !h.is_done());
            if !starting || tokio::time::Instant::now() >= deadline {
                return Err(ApiError::not_found(format!(
                    "no run `{run_id}` in the store"
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The number of `run_id`'s last recorded event.
    pub(crate) async fn last_seq(&self, run_id: &str) -> Result<u64, ApiError> {
        Ok(self.store.last_event_seq(run_id).await?)
    }

    /// Starts a drive of `run_id` on a task, with a hub that holds its events (after the
    /// recorded event `base`).
    pub(crate) fn launch(
        &self,
        agent: &Arc<dyn ServedAgent>,
        run_id: &str,
        go: Go,
        base: u64,
    ) -> Arc<RunHub> {
        let hub = RunHub::new(base);
        self.hubs.insert(run_id, Arc::clone(&hub));
        let driven = agent.go(&self.runtime, go, Arc::clone(&hub));
        hub.set_cancel(driven.cancel);
        let (hubs, run_id, held) = (Arc::clone(&self.hubs), run_id.to_owned(), Arc::clone(&hub));
        tokio::spawn(async move {
            if let Err(error) = driven.done.await {
                tracing::warn!(run_id, %error, "a served run ended with an error");
            }
            held.finish();
            hubs.release_later(run_id, held);
        });
        hub
    }

    /// The pending calls of the stored run, when it waits for approval.
    pub(crate) fn pending(stored: &StoredRun) -> Option<&[agentry::PendingApproval]> {
        match &stored.snapshot.stop {
            Some(agentry::StopReason::AwaitingApproval { pending }) => Some(pending),
            _ => None,
        }
    }

    /// Goes on with the paused run `stored` with `decisions` (each pending call decided once)
    /// in a drive of this process; the conflict error names the run.
    pub(crate) async fn go_on(
        &self,
        stored: &StoredRun,
        decisions: Vec<agentry::Decision>,
    ) -> Result<Arc<RunHub>, ApiError> {
        let run_id = &stored.snapshot.run_id;
        let pending = Self::pending(stored).ok_or_else(|| {
            ApiError::conflict(format!(
                "run `{run_id}` is not waiting for approval (it is {})",
                stored.snapshot.status()
            ))
        })?;
        agentry::match_decisions(pending, decisions.iter().cloned())
            .map_err(|e| ApiError::conflict(format!("cannot decide run `{run_id}`: {e}")))?;
        let agent = self.agent(Some(&stored.snapshot.agent))?.clone();
        let base = self.last_seq(run_id).await?;
        let go = Go::Decide {
            run_id: run_id.clone(),
            decisions,
        };
        Ok(self.launch(&agent, run_id, go, base))
    }

    /// The run of `session` that waits for approval (`what` names the session to the client:
    /// `chat`, `thread`).
    pub(crate) async fn paused_in(&self, session: &str, what: &str) -> Result<StoredRun, ApiError> {
        let query = agentry::RunQuery::session(session)
            .status(agentry::RunStatus::AwaitingApproval)
            .limit(1);
        let paused = self.store.list(&query).await?.into_iter().next();
        let Some(paused) = paused else {
            return Err(ApiError::conflict(format!(
                "{what} `{session}` has no run waiting for approval"
            )));
        };
        self.load(&paused.run_id).await
    }

    /// `value` with secrets masked, when the runtime masks them.
    pub(crate) fn redact(&self, mut value: Value) -> Value {
        if let Some(r) = &self.redactor {
            agentry::redact::redact_value(&**r, &mut value);
        }
        value
    }
}
