//! Going on with a stored run: resuming it from its last checkpoint, deciding its waiting calls.

use super::driver::Start;
use super::handle::Observe;
use super::{RunHandle, Runtime, check_decisions, drive, resume_error, typed};
use agentry_core::run::approval::call_list;
use agentry_core::{
    Agent, AgentState, Decision, Error, MessageLog, PendingApproval, RunMachine, RunOptions,
    RunOutput, RunSnapshot, RunStore, SNAPSHOT_VERSION, StopReason, StoredRun,
};
use serde::de::DeserializeOwned;
use std::collections::HashMap;

impl Runtime {
    /// Continues a run from a snapshot (a checkpoint from a store, or one you serialized), with
    /// the same agent definition. A run that ended can only be resumed if it was cancelled; a
    /// paused run is continued with [`decide`](Self::decide).
    pub async fn resume_snapshot<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
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
            Observe::default(),
        )
        .await
    }

    /// Continues a run from its last checkpoint in the runtime's store: after its process died,
    /// or after it was cancelled. Nothing checkpointed is done again: a step whose checkpoint was
    /// saved is not repeated, and tool calls that were in flight are issued again with the same
    /// call ids, so [`ToolCtx::idempotency_key`](agentry_core::ToolCtx::idempotency_key) is the
    /// same both times and tools with side effects can de-duplicate.
    ///
    /// The run is claimed first, and only when no live process drives it: while another process
    /// holds its lease (it renews it as long as it drives the run), the resume gets
    /// [`StoreError::Leased`](agentry_core::StoreError::Leased) and does nothing; a process that
    /// died leaves its lease to expire after [`lease_ttl`](Self::lease_ttl). When several
    /// processes resume it at once, exactly one goes on and the others get `Leased` or
    /// [`StoreError::Conflict`](agentry_core::StoreError::Conflict).
    pub async fn resume<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
    ) -> Result<RunOutput<S, O>, Error> {
        self.resume_observed(agent, run_id, Observe::default())
            .await
    }

    /// [`resume`](Self::resume), started in a tokio task: the handle streams the continued run's
    /// events and cancels it. A run that cannot be resumed ends the stream at once, and its
    /// error comes from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start_resume<S: AgentState, O: DeserializeOwned + Send + 'static>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
    ) -> RunHandle<S, O> {
        let (runtime, agent, id) = (self.clone(), agent.clone(), run_id.to_owned());
        RunHandle::spawn(run_id.to_owned(), move |observe| async move {
            runtime.resume_observed(&agent, &id, observe).await
        })
    }

    pub(super) async fn resume_observed<S: AgentState, O: DeserializeOwned>(
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

    /// Continues a run that paused for approval, with a decision for each pending call (approve,
    /// reject with a reason the model sees, or reject and stop the run), in this process or any
    /// other that opens the same store.
    ///
    /// A run that is not waiting, an unknown run or call, a call decided twice and a pending call
    /// left undecided are errors that change nothing.
    pub async fn decide<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> Result<RunOutput<S, O>, Error> {
        self.decide_observed(agent, run_id, decisions, Observe::default())
            .await
    }

    /// [`decide`](Self::decide), started in a tokio task: the handle streams the continued run's
    /// events and cancels it. Decisions that do not fit the run end the stream at once, and the
    /// error comes from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start_decide<S: AgentState, O: DeserializeOwned + Send + 'static>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> RunHandle<S, O> {
        let (runtime, agent, id) = (self.clone(), agent.clone(), run_id.to_owned());
        let decisions: Vec<Decision> = decisions.into_iter().collect();
        RunHandle::spawn(run_id.to_owned(), move |observe| async move {
            runtime
                .decide_observed(&agent, &id, decisions, observe)
                .await
        })
    }

    pub(super) async fn decide_observed<S: AgentState, O: DeserializeOwned>(
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
        };
        let mut driver = self.driver(def, options, observe.events, observe.cancel)?;
        if let (Some(store), Some(stored)) = (&self.inner.store, stored) {
            let status = stored.snapshot.status();
            driver.lease = store
                .claim(&run_id, stored.lease, status, self.inner.lease_ttl)
                .await?;
            // The log holds the stored history; what the snapshot differs by is written at the
            // first checkpoint, which follows the stored revision. (A run stored before
            // histories were logged writes it whole.)
            driver.log = MessageLog::of_stored(stored);
        }
        driver.scope.ctx.take_state(state);
        driver.machine = RunMachine::restore(&snapshot);
        driver.scope.ctx.set_step(snapshot.step);
        driver.decisions = decisions;
        driver.last_paused = paused;
        typed(drive(driver, Start::Resume).await?)
    }
}
