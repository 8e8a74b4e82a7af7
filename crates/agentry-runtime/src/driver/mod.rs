//! The in-process driver of one run: executes the effects the step machine asks for (firing the
//! hooks of each phase, checkpointing after every step), feeds it their results, and handles
//! cancellation and failure. It decides nothing of the run's course: the machine does.

use super::RuntimeInner;
use super::lease::{LeaseKeeper, LeaseLoss};
use super::nesting;
use super::open_calls::OpenCalls;
use super::scope::Scope;
mod checkpoint;
mod course;
mod ending;

use agentry_core::hooks::{Events, Hooks, StepDecision};
use agentry_core::{
    AgentDef, Decision, ErasedState, Error, MessageLog, Model, PendingApproval, QueuedSave,
    RecordedEvent, RunContextSpec, RunEngine, RunEvent, RunMachine, RunSnapshot, StopReason,
    ToolSet, ToolSource,
};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// How a run begins.
pub(crate) enum Start {
    /// A new run with this input.
    New(agentry_core::Content),
    /// A run restored from a snapshot; `fresh` when the store never had it (a snapshot kept
    /// elsewhere, a fork), so its events begin here.
    Resume { fresh: bool },
}

/// What a run that ended without failing leaves.
pub(crate) struct Finished {
    pub run_id: String,
    pub session_id: Option<String>,
    pub output: Option<Value>,
    pub stop: StopReason,
    pub machine: RunMachine,
    pub state: Box<dyn ErasedState>,
}

type Ending = (Option<Value>, StopReason);

/// What the body returns when it notices the run was cancelled between two phases.
const CANCELLED: Ending = (None, StopReason::Cancelled);

pub(crate) struct Driver {
    pub def: Arc<AgentDef>,
    pub rt: Arc<RuntimeInner>,
    pub scope: Scope,
    pub model: Arc<dyn Model>,
    /// The model's name, shared by every AfterModel event of the run.
    pub model_name: Arc<str>,
    pub machine: RunMachine,
    pub last_checkpoint: Option<RunSnapshot>,
    /// The run's lease in the store: the runtime saves under it (0 for a new run).
    pub lease: u64,
    /// What of the history the store's message log holds.
    pub log: MessageLog,
    /// The durable parts, when the runtime has a store.
    pub durable: Option<Durable>,
    /// The prompt's running size, kept when the agent compacts its history.
    pub prompt_size: Option<super::compact::PromptSize>,
    /// Compact at the next compaction phase whatever the prompt's size (a `manual`
    /// compaction, [`RunOptions::compact_first`](agentry_core::RunOptions::compact_first)).
    pub compact_now: bool,
    /// A person's decisions on the pending calls, by call id (when a paused run resumes).
    pub decisions: HashMap<String, Decision>,
    /// The calls the run paused on, when it resumes with decisions.
    pub last_paused: Option<Vec<PendingApproval>>,
    /// Sub-agent calls are handed to the caller of the run's effects instead of run here.
    pub delegate_sub_agents: bool,
    /// Calls whose Before event fired and whose closing event has not.
    pub open_calls: OpenCalls,
    /// The run's hooks that are data, stored with each checkpoint.
    pub stored_hooks: Vec<agentry_core::hooks::HookSpecRecord>,
    /// True between BeforeModel and AfterModel.
    pub model_open: bool,
    /// The run's tool sources, asked for their tools before each step.
    pub tool_sources: Vec<Arc<dyn ToolSource>>,
    /// Set by [`RunHandle::leave`](crate::RunHandle::leave): a cancellation leaves the run
    /// unfinished at its last checkpoint instead of cancelling it.
    pub leaving: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// What each source offered when it was last asked, and the definition `def` was built
    /// from (the agent's own, without the sources' tools).
    pub source_tools: Option<Box<SourceTools>>,
    /// The sources' warnings reported so far (each once per run).
    pub source_warnings: Vec<String>,
    /// Where to tell a [`RunHandle`](crate::RunHandle) that the run is in the store (taken
    /// when told).
    pub stored: Option<watch::Sender<Option<bool>>>,
}

/// The tools the run's sources offered when they were last asked.
pub(crate) struct SourceTools {
    /// The agent's own definition.
    base: Arc<AgentDef>,
    /// Each source's tools, in source order.
    seen: Vec<ToolSet>,
}

/// What a driver keeps for a run checkpointed to a store.
pub(crate) struct Durable {
    /// Renews the lease while the run is driven (from its first save or claim).
    keeper: Option<LeaseKeeper>,
    /// Where the keeper reports a lost lease.
    loss: LeaseLoss,
    /// True while a checkpoint is being written: cancellation waits for it to finish.
    saving: watch::Sender<bool>,
    /// True while the run's body runs under cancellation (a checkpoint then yields to it).
    in_body: bool,
    /// The last checkpoint, when it was handed over without waiting for it (the end of a
    /// step): the next save waits for its outcome before its own. (In a mutex only so that the
    /// driver stays `Sync`; it is only reached through `&mut`.)
    pending: std::sync::Mutex<Option<Handed>>,
}

/// A checkpoint handed over to the store whose outcome is not known yet, and the events it
/// carries (put back into the run's record when it is not written, so the next checkpoint
/// saves them).
struct Handed {
    outcome: QueuedSave,
    events: Vec<RecordedEvent>,
}

impl Durable {
    /// The checkpoint handed over last, if its outcome is not known yet.
    fn pending(&mut self) -> &mut Option<Handed> {
        self.pending
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The hooks a run dispatches to: `base` alone when the other scopes add nothing (shared, no
/// copy), else the merge, `base` first.
pub(crate) fn scoped_hooks(base: &Arc<Hooks>, more: &[&Hooks]) -> Arc<Hooks> {
    if more.iter().all(|h| h.is_empty()) {
        return base.clone();
    }
    let mut parts: Vec<&Hooks> = vec![base];
    parts.extend_from_slice(more);
    Arc::new(Hooks::merge(&parts))
}

impl Driver {
    /// A driver for a new run of `def`: resolves its model (the runtime's default when the agent
    /// has none) and creates the run's context, which serializes state changes only when a
    /// StateChange hook or an event stream will see them.
    pub(crate) fn new(
        def: &Arc<AgentDef>,
        rt: &Arc<RuntimeInner>,
        hooks: Arc<Hooks>,
        mut spec: RunContextSpec,
    ) -> Result<Box<Driver>, Error> {
        let model = def
            .model
            .clone()
            .or_else(|| rt.default_model.clone())
            .ok_or_else(|| Error::NoModel {
                agent: def.name.to_string(),
            })?;
        spec.observe_state =
            hooks.wants(Events::STATE_CHANGE) || spec.events.is_some() || spec.record_events;
        // Boxed: a run's future then holds a pointer to its driver, not the driver itself (once
        // in `drive`, once in `end`, once in whatever awaits them).
        Ok(Box::new(Driver {
            def: def.clone(),
            rt: rt.clone(),
            scope: Scope {
                hooks,
                engine: RunEngine::new(spec),
            },
            model_name: Arc::from(model.name()),
            model,
            machine: RunMachine::new(),
            last_checkpoint: None,
            lease: 0,
            log: MessageLog::new(),
            durable: rt.store.is_some().then(|| Durable {
                keeper: None,
                loss: LeaseLoss::default(),
                saving: watch::Sender::new(false),
                in_body: false,
                pending: Default::default(),
            }),
            prompt_size: None,
            compact_now: false,
            decisions: HashMap::new(),
            last_paused: None,
            delegate_sub_agents: false,
            leaving: None,
            open_calls: OpenCalls::default(),
            stored_hooks: Vec::new(),
            model_open: false,
            tool_sources: Vec::new(),
            source_tools: None,
            source_warnings: Vec::new(),
            stored: None,
        }))
    }

    /// Takes what a run's handle watches besides its events and cancellation: the flag that
    /// makes a cancellation leave the run, and where to tell that the run is stored (at once,
    /// `false`, when the runtime has no store).
    pub(crate) fn watched_by(
        &mut self,
        leaving: Option<Arc<std::sync::atomic::AtomicBool>>,
        stored: Option<watch::Sender<Option<bool>>>,
    ) {
        self.leaving = leaving;
        self.stored = stored;
        if self.durable.is_none() {
            self.tell_stored();
        }
    }

    /// Tells the run's handle, once, that the run is in the store (or, without a store, that
    /// it will not be).
    pub(crate) fn tell_stored(&mut self) {
        if let Some(told) = self.stored.take() {
            told.send_replace(Some(self.durable.is_some()));
        }
    }

    /// Asks the run's tool sources for their tools (between steps, never during one) and, when
    /// some changed, rebuilds the definition the run uses with them after the agent's own tools.
    pub(crate) async fn refresh_tools(&mut self) -> Result<(), Error> {
        if self.tool_sources.is_empty() {
            return Ok(());
        }
        let mut now = Vec::with_capacity(self.tool_sources.len());
        for source in &self.tool_sources {
            let tools = source.tools().await.map_err(|e| {
                Error::other(format!(
                    "tool source `{}` could not list its tools: {e}",
                    source.name()
                ))
            })?;
            now.push(tools);
            for warning in source.warnings() {
                if self.source_warnings.contains(&warning) {
                    continue;
                }
                let name = source.name().to_string();
                self.scope.engine.send_event(|p| RunEvent::Custom {
                    name: agentry_core::TOOL_SOURCE_WARNING.to_string(),
                    data: serde_json::json!({"source": name, "message": warning}),
                    agent_path: p.clone(),
                    run_id: None,
                });
                self.source_warnings.push(warning);
            }
        }
        let base = match &self.source_tools {
            Some(known)
                if known.seen.len() == now.len()
                    && known.seen.iter().zip(&now).all(|(a, b)| Arc::ptr_eq(a, b)) =>
            {
                return Ok(());
            }
            Some(known) => known.base.clone(),
            None => self.def.clone(),
        };
        let def = base.with_source_tools(now.iter().flat_map(|set| set.iter()))?;
        self.def = Arc::new(def);
        self.source_tools = Some(Box::new(SourceTools { base, seen: now }));
        Ok(())
    }

    /// Runs to the end: the body under cancellation and deadlines, then RunFailed recovery,
    /// RunEnd and the final checkpoint. Runs started inside it (from a tool or hook) know it
    /// encloses them.
    pub(crate) fn drive(
        self: Box<Self>,
        start: Start,
    ) -> impl Future<Output = Result<Finished, Error>> + Send + 'static {
        nesting::inside(self.scope.engine.clone(), self.drive_here(start))
    }

    async fn drive_here(mut self: Box<Self>, start: Start) -> Result<Finished, Error> {
        let run_id = self.scope.context().run_id().to_string();
        self.scope.engine.send_event(|p| RunEvent::RunStarted {
            run_id: run_id.clone(),
            agent_path: p.clone(),
        });
        let interrupt = interrupted(
            self.scope.engine.clone(),
            self.durable.as_mut().map(|d| {
                d.in_body = true;
                (d.loss.clone(), d.saving.subscribe())
            }),
        );
        let outcome = {
            let body = self.body(start);
            tokio::select! {
                biased;
                why = interrupt => Err(why),
                ending = body => Ok(ending),
            }
        };
        if let Some(d) = &mut self.durable {
            d.in_body = false;
            if d.loss.is_lost() {
                // Another process drives the run now: nothing more is written or done here.
                d.keeper = None;
                let error = d
                    .loss
                    .error()
                    .map_or_else(|| Error::other("the run's lease was lost"), Error::from);
                let msg = error.to_string();
                self.scope.engine.send_event(|p| RunEvent::RunFailed {
                    run_id,
                    error: msg,
                    agent_path: p.clone(),
                });
                return Err(error);
            }
        }
        let ending = match outcome {
            Ok(Ok((_, StopReason::Cancelled))) | Err(Interrupt::Cancelled) if self.is_leaving() => {
                return Err(Box::pin(self.left()).await);
            }
            Ok(Ok((_, StopReason::Cancelled))) | Err(Interrupt::Cancelled) => {
                Box::pin(self.cancelled()).await
            }
            Err(Interrupt::Deadline(stop)) => Box::pin(self.stopped_at_deadline(stop)).await,
            Ok(Ok(ending)) => Ok(ending),
            Ok(Err(e)) => self.recover(e).await,
        };
        match ending {
            Ok((output, stop)) => self.end(output, stop).await,
            Err(e) => Err(self.fail(e).await),
        }
    }

    /// Fails the run with `error`: RunFailed, then the run stays resumable from its last
    /// checkpoint, marked failed with the error, and its lease is released. A store that fails
    /// here cannot change the outcome: the run's own error is the one reported (and the store
    /// keeps the last checkpoint it wrote, under a lease that lapses).
    async fn fail(&mut self, error: Error) -> Error {
        let run_id = self.scope.context().run_id().to_string();
        let msg = error.to_string();
        self.scope.engine.send_event(|p| RunEvent::RunFailed {
            run_id,
            error: msg,
            agent_path: p.clone(),
        });
        if let Err(store_error) = Box::pin(self.save_failure(&error)).await {
            tracing::warn!(%store_error, "the failed run's last checkpoint was not saved");
        }
        self.release();
        error
    }
}

/// The run's stop reason for a step hook's stop decision, made by the hook `by`.
pub(crate) fn stop_reason(decision: &StepDecision, by: Option<&str>) -> StopReason {
    match decision {
        StepDecision::StopWith(reason) => reason.clone(),
        StepDecision::Stop(reason) => StopReason::Hook {
            hook: by.unwrap_or_default().to_string(),
            reason: reason.clone(),
        },
        StepDecision::Skip => unreachable!("a skip is not a stop"),
    }
}

/// Why a run's body was interrupted.
enum Interrupt {
    /// It was cancelled, or (a durable run) its lease was lost.
    Cancelled,
    /// A deadline set with [`RunContext::stop_at`] passed: the run stops for this reason.
    Deadline(StopReason),
}

/// Resolves when the run is cancelled, its lease is lost or its deadline passes, but never while
/// a checkpoint is being written: a checkpoint is never cut off half-way, so what the caller is
/// told, what the store holds and what a resume does agree.
async fn interrupted(
    ctx: RunEngine,
    durable: Option<(LeaseLoss, watch::Receiver<bool>)>,
) -> Interrupt {
    let cancel = ctx.context().cancellation();
    let Some((loss, mut saving)) = durable else {
        return tokio::select! {
            biased;
            () = cancel.cancelled() => Interrupt::Cancelled,
            stop = ctx.deadline_passed() => Interrupt::Deadline(stop),
        };
    };
    let why = tokio::select! {
        biased;
        () = cancel.cancelled() => Interrupt::Cancelled,
        () = loss.token().cancelled() => Interrupt::Cancelled,
        stop = ctx.deadline_passed() => Interrupt::Deadline(stop),
    };
    // An error means the driver is gone, and with it any checkpoint under way.
    let _ = saving.wait_for(|busy| !busy).await;
    why
}
