//! Going on with a stored run: resuming it from its last checkpoint, deciding its waiting calls.

use super::driver::Start;
use super::handle::Observe;
use super::{Runtime, check_decisions, drive, resume_error, typed};
use agentry_core::fork::{Fork, ForkError};
use agentry_core::run::approval::call_list;
use agentry_core::{
    Agent, AgentState, Decision, Error, MessageLog, PendingApproval, RunMachine, RunOptions,
    RunOutput, RunSnapshot, RunStore, SNAPSHOT_VERSION, StopReason, StoredRun,
};
use serde::de::DeserializeOwned;
use std::collections::HashMap;

impl Runtime {
    /// Goes on with a run from `snapshot` (a checkpoint from a store, or one you serialized),
    /// with the same agent definition.
    pub(super) async fn resume_snapshot<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = match &self.inner.store {
            Some(store) => store.load(&snapshot.run_id).await?,
            None => None,
        };
        self.continue_run(
            agent,
            snapshot,
            stored.as_ref(),
            HashMap::new(),
            None,
            observe,
        )
        .await
    }

    /// Goes on with run `run_id` from its last checkpoint in the runtime's store.
    pub(super) async fn resume_stored<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = self.load_run(run_id).await?;
        if let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop {
            return Err(resume_error(
                run_id,
                format!(
                    "it waits for approval of {}; continue it with `Runtime::decide` and a decision for each",
                    call_list(pending.iter())
                ),
            ));
        }
        let snapshot = stored.snapshot.clone();
        self.continue_run(
            agent,
            snapshot,
            Some(&stored),
            HashMap::new(),
            None,
            observe,
        )
        .await
    }

    /// Goes on with run `run_id`, paused for approval, with `decisions`.
    pub(super) async fn decided<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = self.load_run(run_id).await?;
        let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop else {
            return Err(resume_error(
                run_id,
                format!(
                    "it is not waiting for approval (it is {})",
                    stored.snapshot.status()
                ),
            ));
        };
        let decisions = check_decisions(run_id, pending, decisions)?;
        let pending = pending.clone();
        let mut snapshot = stored.snapshot.clone();
        snapshot.stop = None;
        self.continue_run(
            agent,
            snapshot,
            Some(&stored),
            decisions,
            Some(pending),
            observe,
        )
        .await
    }

    /// Runs a fork of stored run `from` as run `run_id`.
    pub(super) async fn forked<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        from: &str,
        run_id: String,
        fork: &Fork,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let missing = |why: &str| {
            Error::Fork(ForkError::NoSuchRun {
                run_id: from.to_string(),
                why: why.to_string(),
            })
        };
        let store = self.inner.store.as_ref().ok_or_else(|| {
            missing(
                "this runtime has no store to read it from: configure the one it was run with, `Runtime::store(..)`",
            )
        })?;
        let stored = store
            .load(from)
            .await?
            .ok_or_else(|| missing("the store has no run with this id"))?;
        let events = store.events(from).await?;
        let snapshot = fork.snapshot(&stored.snapshot, &events, run_id)?;
        self.resume_snapshot(agent, snapshot, observe).await
    }

    /// Loads a run from the store, or says why it cannot.
    pub(super) async fn load_run(&self, run_id: &str) -> Result<agentry_core::StoredRun, Error> {
        let store = self.inner.store.as_ref().ok_or_else(|| {
            resume_error(
                run_id,
                "this runtime has no store; paused and interrupted runs continue from one: configure it with `Runtime::store(..)` (`MemoryStore` within one process, `SqliteStore` or `PostgresStore` from agentry-store across processes)",
            )
        })?;
        store
            .load(run_id)
            .await?
            .ok_or_else(|| resume_error(run_id, "the store has no run with this id"))
    }

    /// Checks a snapshot against the agent, claims the run (when `stored`, as loaded) and drives
    /// it on.
    pub(super) async fn continue_run<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
        stored: Option<&StoredRun>,
        decisions: HashMap<String, Decision>,
        paused: Option<Vec<PendingApproval>>,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let run_id = snapshot.run_id.clone();
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(resume_error(
                &run_id,
                format!(
                    "its format version is {}, this build reads {SNAPSHOT_VERSION}",
                    snapshot.version
                ),
            ));
        }
        if snapshot.agent != *agent.name() {
            return Err(resume_error(
                &run_id,
                format!(
                    "it belongs to agent `{}`, not `{}`; resume it with the agent that started it",
                    snapshot.agent,
                    agent.name()
                ),
            ));
        }
        match &snapshot.stop {
            None | Some(StopReason::Cancelled) => {}
            Some(StopReason::AwaitingApproval { pending }) => {
                return Err(resume_error(
                    &run_id,
                    format!(
                        "it waits for approval of {}; continue it with `Runtime::decide`",
                        call_list(pending.iter())
                    ),
                ));
            }
            Some(stop) => return Err(resume_error(&run_id, format!("it already ended ({stop})"))),
        }
        let def = agent.def();
        let state = def.initial_state.parse_json(snapshot.state.clone())?;
        let scope = self
            .restore_scope(&snapshot.hooks)
            .map_err(|e| resume_error(&run_id, e.to_string()))?;
        let options = RunOptions {
            run_id: Some(run_id.clone()),
            session_id: snapshot.session_id.clone(),
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
            hooks: scope.hooks,
            stored_hooks: scope.records,
            tool_sources: scope.tool_sources,
            compact_first: false,
        };
        let mut driver = self.driver(def, options, observe.events, observe.cancel)?;
        driver.watched_by(observe.leave, observe.stored);
        if let (Some(store), Some(stored)) = (&self.inner.store, stored) {
            let status = stored.snapshot.status();
            driver.lease = store
                .claim(&run_id, stored.lease, status, self.inner.lease_ttl)
                .await?;
            // The log holds the stored history; what the snapshot differs by is written at the
            // first checkpoint, which follows the stored revision. (A run stored before
            // histories were logged writes it whole.)
            driver.log = MessageLog::of_stored(stored);
            driver.tell_stored();
        }
        driver.scope.engine.take_state(state);
        driver.machine = RunMachine::restore(&snapshot);
        driver.scope.engine.set_step(snapshot.step);
        driver.decisions = decisions;
        driver.last_paused = paused;
        let fresh = stored.is_none();
        typed(drive(driver, Start::Resume { fresh }).await?)
    }
}
