//! The in-process driver of one run: feeds the step machine, executes its effects, fires the hooks
//! of each phase, checkpoints after every step, and handles cancellation and failure.

use super::RuntimeInner;
use super::lease::{LeaseKeeper, LeaseLoss};
use super::nesting;
use super::open_calls::{OpenCall, OpenCalls};
use super::scope::Scope;
use super::tool_call::HeldCalls;
use agentry_core::hooks::{
    AfterModel, AfterStep, BeforeStep, Events, HookFailed, Hooks, Resolver, RunEnd, RunError,
    RunStart, StepDecision, Stop, StoppedByHuman, SubAgentError, ToolError,
};
use agentry_core::{
    AgentDef, Checkpoint, Decision, ErasedState, Error, FinishReason, MessageLog, Model,
    ModelResponse, PendingApproval, QueuedSave, RecordedEvent, RunContext, RunContextSpec,
    RunEvent, RunMachine, RunSnapshot, SNAPSHOT_VERSION, StepStart, StopReason, ToolSet,
    ToolSource, Turn, Verdict,
};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// How a run begins.
pub(crate) enum Start {
    /// A new run with this input.
    New(String),
    /// A run restored from a snapshot.
    Resume,
}

/// What a run that ended without failing leaves.
pub(crate) struct Finished {
    pub run_id: String,
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
    /// True between the start of a step and its end.
    pub in_step: bool,
    /// The prompt's running size, kept when the agent compacts its history.
    pub prompt_size: Option<super::compact::PromptSize>,
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
    /// What each source offered when it was last asked, and the definition `def` was built
    /// from (the agent's own, without the sources' tools).
    pub source_tools: Option<Box<SourceTools>>,
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
                ctx: RunContext::new(spec),
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
            in_step: false,
            prompt_size: None,
            decisions: HashMap::new(),
            last_paused: None,
            delegate_sub_agents: false,
            open_calls: OpenCalls::default(),
            stored_hooks: Vec::new(),
            model_open: false,
            tool_sources: Vec::new(),
            source_tools: None,
        }))
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

    /// Runs to the end: the body under cancellation and deadlines, then RunError recovery,
    /// RunEnd and the final checkpoint. Runs started inside it (from a tool or hook) know it
    /// encloses them.
    pub(crate) fn drive(
        self: Box<Self>,
        start: Start,
    ) -> impl Future<Output = Result<Finished, Error>> + Send + 'static {
        nesting::inside(self.scope.ctx.clone(), self.drive_here(start))
    }

    async fn drive_here(mut self: Box<Self>, start: Start) -> Result<Finished, Error> {
        let run_id = self.scope.ctx.run_id().to_string();
        self.scope.ctx.send_event(|p| RunEvent::RunStarted {
            run_id: run_id.clone(),
            agent_path: p.clone(),
        });
        let interrupt = interrupted(
            self.scope.ctx.clone(),
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
                self.scope.ctx.send_event(|p| RunEvent::RunFailed {
                    run_id,
                    error: msg,
                    agent_path: p.clone(),
                });
                return Err(error);
            }
        }
        let ending = match outcome {
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
        let run_id = self.scope.ctx.run_id().to_string();
        let msg = error.to_string();
        self.scope.ctx.send_event(|p| RunEvent::RunFailed {
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

    async fn body(&mut self, start: Start) -> Result<Ending, Error> {
        if !self.tool_sources.is_empty() {
            Box::pin(self.refresh_tools()).await?;
        }
        match start {
            Start::New(input) => {
                if self.continues_session() {
                    // Boxed: rare, and it would otherwise grow every run's future.
                    Box::pin(self.continue_session()).await?;
                }
                let input = if self.scope.wants(Events::RUN_START) {
                    self.scope.hook(RunStart { input }).await?.input
                } else {
                    input
                };
                let m = self.machine.add_user(input);
                self.scope.added(m).await?;
                // Handed over without waiting, like a step's end: the first model turn goes on
                // while it is written, and the next checkpoint waits for it.
                self.queued_checkpoint().await?;
            }
            Start::Resume => {
                // Saved first, under the lease just claimed: a process that lost the run to
                // another fails here, before any effect.
                self.checkpoint(None, None).await?;
                Box::pin(self.resolved_by_person()).await?;
                if let Some(turn) = self.machine.pending.clone() {
                    let step = self.machine.step;
                    self.scope.ctx.set_step(step);
                    self.in_step = true;
                    if let Some(held) = self.run_tools(turn).await? {
                        return Box::pin(self.tools_held(held, step)).await;
                    }
                    if let Some(stop) = self.end_step(step, true).await? {
                        self.stop_event(stop.clone(), None).await?;
                        return Ok((None, stop));
                    }
                }
            }
        }
        self.steps().await
    }

    async fn steps(&mut self) -> Result<Ending, Error> {
        loop {
            if self.scope.ctx.is_cancelled() {
                return Ok(CANCELLED);
            }
            // A deadline that passed while nothing awaited (a hook that asked to stop now, from a
            // step that never yielded) is honoured here, before the next step's first effect.
            if let Some(stop) = self.scope.ctx.passed_deadline() {
                self.stop_event(stop.clone(), None).await?;
                return Ok((None, stop));
            }
            let step = match self.machine.begin_step(self.def.max_steps) {
                StepStart::Begin(step) => step,
                StepStart::Limit(limit) => {
                    let stop = StopReason::MaxSteps { limit };
                    self.stop_event(stop.clone(), None).await?;
                    return Ok((None, stop));
                }
            };
            if !self.tool_sources.is_empty() && step > 1 {
                // Boxed: rare, and it would otherwise grow every step's future.
                Box::pin(self.refresh_tools()).await?;
            }
            self.scope.ctx.set_step(step);
            self.in_step = true;
            if self.scope.wants(Events::BEFORE_STEP) {
                let (ev, by) = self.scope.hook_decided(BeforeStep::new(step)).await?;
                if self.scope.ctx.is_cancelled() {
                    return Ok(CANCELLED);
                }
                match ev.decision() {
                    Some(StepDecision::Skip) => {
                        self.step_started(step);
                        if let Some(stop) = self.end_step(step, true).await? {
                            self.stop_event(stop.clone(), None).await?;
                            return Ok((None, stop));
                        }
                        continue;
                    }
                    Some(decision @ (StepDecision::Stop(_) | StepDecision::StopWith(_))) => {
                        self.machine.abandon_step();
                        self.in_step = false;
                        let stop = stop_reason(decision, by.as_deref());
                        self.stop_event(stop.clone(), None).await?;
                        return Ok((None, stop));
                    }
                    None => {}
                }
            }
            self.step_started(step);

            if self.def.compaction.is_some() {
                // Boxed: the phase is large and most agents never compact, so their runs'
                // futures stay small.
                Box::pin(self.compact_phase()).await?;
            }
            let response = self.model_phase(step).await?;
            if self.scope.ctx.is_cancelled() {
                return Ok(CANCELLED);
            }
            let aborted = match &response.finish_reason {
                FinishReason::Aborted(reason) => Some(reason.clone()),
                _ => None,
            };
            let text = response
                .tool_calls
                .is_empty()
                .then(|| response.text.clone());
            let (message, turn) = self.machine.accept_response(response);
            self.scope.added(message.clone()).await?;
            if let Some(reason) = aborted {
                self.end_step(step, true).await?;
                let stop = StopReason::Aborted { reason };
                self.stop_event(stop.clone(), None).await?;
                return Ok((None, stop));
            }

            let mut final_output = None;
            match turn {
                Turn::Tools => {
                    // The turn is saved before its calls run: a process that dies now resumes
                    // by re-issuing them, with the same call ids (and idempotency keys).
                    if self.rt.store.is_some() {
                        self.checkpoint(None, None).await?;
                    }
                    if let Some(held) = self.run_tools(message).await? {
                        return Box::pin(self.tools_held(held, step)).await;
                    }
                    if self.scope.ctx.is_cancelled() {
                        return Ok(CANCELLED);
                    }
                }
                Turn::Final => {
                    let text = text.unwrap_or_default();
                    match self.machine.judge_final(
                        &text,
                        self.def.output.as_ref(),
                        self.def.output_retries,
                    ) {
                        Verdict::Accept(value) => final_output = Some(value),
                        Verdict::Retry(feedback) => {
                            let m = self.machine.add_user(feedback);
                            self.scope.added(m).await?;
                        }
                        Verdict::Fail { attempts, error } => {
                            return Err(Error::InvalidOutput {
                                agent: self.def.name.to_string(),
                                attempts,
                                error,
                            });
                        }
                    }
                }
            }

            // A step that answered is not checkpointed on its own: the outcome (or a Stop
            // hook's veto) is, right after.
            let hook_stop = self.end_step(step, final_output.is_none()).await?;
            if let Some(output) = final_output {
                let stop = StopReason::FinalAnswer;
                if let Some(veto) = self.stop_event(stop.clone(), Some(&output)).await? {
                    let m = self.machine.add_user(veto);
                    self.scope.added(m).await?;
                    self.checkpoint(None, None).await?;
                    continue;
                }
                return Ok((Some(output), stop));
            }
            if let Some(stop) = hook_stop {
                self.stop_event(stop.clone(), None).await?;
                return Ok((None, stop));
            }
        }
    }

    /// Ends a tool phase that did not settle every call: the run pauses for approval, or a
    /// person stopped it. (Kept apart, and boxed by its callers, so the common step's future
    /// holds none of it.)
    async fn tools_held(&mut self, outcome: HeldCalls, step: u32) -> Result<Ending, Error> {
        match outcome {
            HeldCalls::Paused(pending) => self.pause(pending).await,
            HeldCalls::Stopped {
                call_id,
                reason,
                by,
            } => {
                if self.scope.wants(Events::STOPPED_BY_HUMAN) {
                    let ev = StoppedByHuman::new(call_id.clone(), reason.clone(), by);
                    self.scope.hook(ev).await?;
                }
                self.end_step(step, true).await?;
                let stop = StopReason::StoppedByHuman { call_id, reason };
                self.stop_event(stop.clone(), None).await?;
                Ok((None, stop))
            }
        }
    }

    /// Pauses the run until its pending calls are decided: the step stays open, and the run
    /// ends this call with [`StopReason::AwaitingApproval`] (checkpointed by `end`).
    async fn pause(&mut self, pending: Vec<PendingApproval>) -> Result<Ending, Error> {
        self.in_step = false;
        let p = pending.clone();
        self.scope
            .ctx
            .send_event(|path| RunEvent::AwaitingApproval {
                pending: p,
                agent_path: path.clone(),
            });
        let stop = StopReason::AwaitingApproval { pending };
        self.stop_event(stop.clone(), None).await?;
        Ok((None, stop))
    }

    /// Fires ApprovalResolved for the decisions a person gave (when a paused run resumes).
    pub(crate) async fn resolved_by_person(&mut self) -> Result<(), Error> {
        let pending = match self.last_paused.take() {
            Some(p) => p,
            None => return Ok(()),
        };
        for p in pending {
            if let Some(decision) = self.decisions.get(&p.call_id).cloned() {
                self.approval_resolved(&decision, &Resolver::Person);
                if !self.scope.wants(Events::APPROVAL_RESOLVED) {
                    continue;
                }
                let ev = agentry_core::hooks::ApprovalResolved::new(p, decision, Resolver::Person);
                self.scope.hook(ev).await?;
            }
        }
        Ok(())
    }

    fn step_started(&self, step: u32) {
        self.scope.ctx.send_event(|p| RunEvent::StepStarted {
            step,
            agent_path: p.clone(),
        });
    }

    /// Ends a step: AfterStep (which may stop the run) and, when `save`, a checkpoint.
    pub(crate) async fn end_step(
        &mut self,
        step: u32,
        save: bool,
    ) -> Result<Option<StopReason>, Error> {
        self.in_step = false;
        self.scope.ctx.send_event(|p| RunEvent::StepFinished {
            step,
            agent_path: p.clone(),
        });
        let mut stop = None;
        if self.scope.wants(Events::AFTER_STEP) {
            let ev = AfterStep::new(step, self.machine.usage, self.machine.model_calls);
            let (ev, by) = self.scope.hook_decided(ev).await?;
            stop = ev.stop_decision().map(|d| stop_reason(d, by.as_deref()));
        }
        if save && self.rt.store.is_some() {
            // Handed over without waiting: the next model turn goes on while it is written, and
            // the next checkpoint (before that turn's tool calls run, or the outcome) waits for
            // it, often sharing its transaction.
            self.queued_checkpoint().await?;
        }
        Ok(stop)
    }

    /// Fires Stop, with the final answer when the run stops with one; returns the veto message
    /// when a hook vetoed a natural stop.
    pub(crate) async fn stop_event(
        &mut self,
        reason: StopReason,
        output: Option<&Value>,
    ) -> Result<Option<String>, Error> {
        if !self.scope.wants(Events::STOP) {
            return Ok(None);
        }
        let ev = match output {
            Some(output) => Stop::with_output(reason, self.machine.step, output.clone()),
            None => Stop::new(reason, self.machine.step),
        };
        let ev = self.scope.hook(ev).await?;
        Ok(ev.vetoed().map(str::to_string))
    }

    async fn recover(&mut self, error: Error) -> Result<Ending, Error> {
        if !self.scope.wants(Events::RUN_ERROR) {
            return Err(error);
        }
        let error = Arc::new(error);
        let (ev, by) = self
            .scope
            .hook_decided(RunError::new(error.clone()))
            .await?;
        if let Some(output) = ev.recovery() {
            let stop = StopReason::Recovered {
                hook: by.as_deref().unwrap_or_default().to_string(),
                error: error.to_string(),
            };
            return Ok((Some(output.clone()), stop));
        }
        drop(ev);
        Err(Arc::try_unwrap(error).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// Ends a cancelled run: the step under way does not count, and the store keeps the last
    /// checkpoint (the state at the end of the last completed step), marked cancelled, so the run
    /// can be resumed from there.
    async fn cancelled(&mut self) -> Result<Ending, Error> {
        Box::pin(self.close_open_calls("the run was cancelled")).await?;
        if self.in_step {
            self.machine.abandon_step();
            self.in_step = false;
        }
        if self.rt.store.is_some() {
            let mut snapshot = match self.last_checkpoint.take() {
                Some(s) => s,
                None => self.snapshot(None, None)?,
            };
            snapshot.stop = Some(StopReason::Cancelled);
            let saved = self.save(&snapshot, true).await;
            self.last_checkpoint = Some(snapshot);
            saved?;
        }
        self.stop_event(StopReason::Cancelled, None).await?;
        Ok((None, StopReason::Cancelled))
    }

    /// Ends a run whose deadline ([`RunContext::stop_at`], e.g. the guards' wall time) passed
    /// while it was under way: what was in flight was dropped; the calls of the turn under way
    /// get an error result saying why, so the history stays well-formed (a session can go on
    /// from it), and the run ends with the deadline's stop reason.
    async fn stopped_at_deadline(&mut self, stop: StopReason) -> Result<Ending, Error> {
        self.close_open_calls(&format!("the run stopped: {stop}"))
            .await?;
        self.in_step = false;
        for message in self.machine.cut_short(&stop) {
            self.scope.added(message).await?;
        }
        self.stop_event(stop.clone(), None).await?;
        Ok((None, stop))
    }

    /// Closes the calls that were under way when the run was interrupted with their error
    /// events (`why` is their error); what those hooks decide cannot change the run's end.
    async fn close_open_calls(&mut self, why: &str) -> Result<(), Error> {
        for open in self.scope.ctx.take_open_hooks() {
            let ev = HookFailed::new(
                open.hook,
                open.event,
                open.started.elapsed(),
                format!("interrupted: {why}"),
                open.advisory,
            );
            self.scope.hook(ev).await?;
        }
        if std::mem::take(&mut self.model_open) {
            // The turn under way ends with nothing: an aborted, empty response.
            let response = ModelResponse {
                finish_reason: FinishReason::Aborted(why.to_string()),
                ..ModelResponse::default()
            };
            let ev = AfterModel::from_model(self.model_name.clone(), response);
            self.scope.hook(ev).await?;
        }
        for open in self.open_calls.take() {
            let error = format!("the call did not finish: {why}");
            match open {
                OpenCall::Tool { call, input } => {
                    self.scope
                        .hook(ToolError::for_call(call, input, error))
                        .await?;
                }
                OpenCall::SubAgent { agent, input } => {
                    self.scope
                        .hook(SubAgentError::new(agent, input, error))
                        .await?;
                }
            }
        }
        Ok(())
    }

    async fn end(
        mut self: Box<Self>,
        output: Option<Value>,
        stop: StopReason,
    ) -> Result<Finished, Error> {
        // The outcome is stored before RunEnd hooks run: a hook that fails now cannot make a
        // resume do the finished work again. When it cannot be stored, the run fails at its last
        // checkpoint (a resume does the last step again) and no RunEnd hook runs.
        if stop != StopReason::Cancelled
            && let Err(e) = self.checkpoint(Some(&stop), output.as_ref()).await
        {
            return Err(self.fail(e).await);
        }
        if self.scope.wants(Events::RUN_END) {
            let ev = RunEnd::new(
                stop.clone(),
                output.clone(),
                self.machine.usage,
                self.machine.step,
            );
            self.scope.hook(ev).await?;
        }
        let run_id = self.scope.ctx.run_id().to_string();
        let s = stop.clone();
        self.scope.ctx.send_event(|p| RunEvent::RunFinished {
            run_id: run_id.clone(),
            stop: s,
            agent_path: p.clone(),
        });
        // The outcome is stored already: a store that cannot take the events that came after it
        // (RunEnd's, the finish) cannot change it, and the caller is told what the store holds.
        if let Err(store_error) = Box::pin(self.save_events()).await {
            tracing::warn!(%store_error, "the events after the run's outcome were not saved");
        }
        self.release();
        let state = self.scope.ctx.take_state(Box::new(()));
        Ok(Finished {
            run_id,
            output,
            stop,
            machine: self.machine,
            state,
        })
    }

    /// Stops renewing the run's lease (the last save released it, or the run failed and lets it
    /// expire).
    fn release(&mut self) {
        if let Some(d) = &mut self.durable {
            d.keeper = None;
        }
    }

    /// Marks the run failed with `error` at its last checkpoint (or where it stands, when it
    /// failed before its first), with the events recorded since, and releases its lease.
    async fn save_failure(&mut self, error: &Error) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let mut snapshot = match self.last_checkpoint.take() {
            Some(s) => s,
            None => self.snapshot(None, None)?,
        };
        if snapshot.stop.is_none() {
            snapshot.error = Some(self.scope.ctx.redact(&error.to_string()).into_owned());
        }
        self.save(&snapshot, true).await?;
        self.last_checkpoint = Some(snapshot);
        Ok(())
    }

    /// Saves the events recorded since the last checkpoint with that checkpoint again (when the
    /// run ends without a new one: cancelled, or events came after the final one).
    async fn save_events(&mut self) -> Result<(), Error> {
        if !self.scope.ctx.has_recorded() {
            return Ok(());
        }
        match self.last_checkpoint.take() {
            Some(snapshot) => {
                self.save(&snapshot, true).await?;
                self.last_checkpoint = Some(snapshot);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Hands the run as it stands to the store without waiting for it to be written: the next
    /// save waits for it first. Only for checkpoints whose next effect is a model turn (no tool
    /// runs, nothing ends, before the next checkpoint).
    async fn queued_checkpoint(&mut self) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let snapshot = self.snapshot(None, None)?;
        self.save_as(&snapshot, false, true).await?;
        self.last_checkpoint = Some(snapshot);
        Ok(())
    }

    /// Saves a snapshot when the runtime has a store.
    async fn checkpoint(
        &mut self,
        stop: Option<&StopReason>,
        output: Option<&Value>,
    ) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let snapshot = self.snapshot(stop.cloned(), output.cloned())?;
        self.save(&snapshot, stop.is_some()).await?;
        self.last_checkpoint = Some(snapshot);
        if let Some(d) = &self.durable
            && d.in_body
            && (self.scope.ctx.is_cancelled()
                || d.loss.is_lost()
                || self.scope.ctx.deadline_has_passed())
        {
            // Cancelled (or taken over, or past its deadline) while this checkpoint was written,
            // which an interruption waits for: stop here, before any further effect, and let it
            // take the run from this checkpoint.
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    /// Saves `snapshot` with the messages it adds to the run's log and the events recorded since
    /// the last save, under the run's lease, which it goes on holding while the run is under way
    /// and releases when the run paused or ended. It takes the snapshot by reference: a snapshot
    /// moved into this future would be held twice in the future of every step that checkpoints.
    async fn save(&mut self, snapshot: &RunSnapshot, release: bool) -> Result<(), Error> {
        self.save_as(snapshot, release, false).await
    }

    /// Saves as [`save`](Self::save) does; when `queued`, hands the checkpoint over and returns
    /// without waiting for it to be written (the next save waits for it first).
    ///
    /// When a checkpoint is not written (this one, or the one handed over before it), the run's
    /// message log goes back to the last checkpoint written and the events of those that were
    /// not are put back, so the next save (the failure's) writes them; the store refuses a
    /// checkpoint handed over after one that failed, so it never holds half a sequence.
    async fn save_as(
        &mut self,
        snapshot: &RunSnapshot,
        release: bool,
        queued: bool,
    ) -> Result<(), Error> {
        let (Some(store), Some(durable)) = (self.rt.store.clone(), self.durable.as_mut()) else {
            return Ok(());
        };
        let events = self.scope.ctx.take_recorded();
        let append = self.log.append(&snapshot.messages);
        let hold = (!release).then_some(self.rt.lease_ttl);
        durable.saving.send_replace(true);
        let handed = store
            .save_queued(
                Checkpoint {
                    snapshot,
                    lease: self.lease,
                    revision: append.revision,
                    appended: &append.appended,
                    layout: &append.layout,
                    events: &events,
                    hold,
                },
                queued,
            )
            .await;
        let this = match handed {
            Ok(outcome) => {
                self.log.handed(snapshot.messages.clone(), append.layout);
                Ok(Handed { outcome, events })
            }
            Err(e) => Err((e, events)),
        };
        // The checkpoint handed over before this one is written first; its outcome comes first.
        // What was not written: the events of the checkpoints that were not, oldest first.
        let mut unwritten = Vec::new();
        let mut failure = None;
        if let Some(Handed { outcome, events }) = durable.pending().take() {
            match outcome.await {
                Ok(()) => self.log.written(),
                Err(e) => {
                    unwritten = events;
                    failure = Some(e);
                }
            }
        }
        let saved = match (this, failure) {
            (Err((e, events)), failure) => {
                unwritten.extend(events);
                Err(failure.unwrap_or(e))
            }
            // It follows a checkpoint that failed: the store refuses it.
            (Ok(handed), Some(e)) => {
                unwritten.extend(handed.events);
                Err(e)
            }
            (Ok(handed), None) if queued => {
                *durable.pending() = Some(handed);
                Ok(())
            }
            (Ok(Handed { outcome, events }), None) => match outcome.await {
                Ok(()) => {
                    self.log.written();
                    Ok(())
                }
                Err(e) => {
                    unwritten.extend(events);
                    Err(e)
                }
            },
        };
        durable.saving.send_replace(false);
        if let Err(e) = saved {
            self.log.failed();
            self.scope.ctx.restore_recorded(unwritten);
            return Err(e.into());
        }
        match hold {
            Some(ttl) if durable.keeper.is_none() => {
                durable.keeper = Some(LeaseKeeper::start(
                    store,
                    snapshot.run_id.clone(),
                    self.lease,
                    ttl,
                    durable.loss.clone(),
                    self.scope.ctx.cancellation().clone(),
                ));
            }
            Some(_) => {}
            None => durable.keeper = None,
        }
        Ok(())
    }

    /// The run as it stands, serializable.
    pub(crate) fn snapshot(
        &self,
        stop: Option<StopReason>,
        output: Option<Value>,
    ) -> Result<RunSnapshot, Error> {
        let ctx = &self.scope.ctx;
        let info = ctx.info();
        Ok(RunSnapshot {
            version: SNAPSHOT_VERSION,
            run_id: ctx.run_id().to_string(),
            parent_run_id: ctx.parent_run_id().map(str::to_string),
            agent: self.def.name.to_string(),
            session_id: info.session_id.clone(),
            user_id: info.user_id.clone(),
            tags: info.tags.clone(),
            metadata: info.metadata.clone(),
            messages: self.machine.messages.clone(),
            state: ctx.state_json()?,
            step: self.machine.step,
            usage: self.machine.usage,
            retried_usage: self.machine.retried_usage,
            model_calls: self.machine.model_calls,
            output_attempts: self.machine.output_attempts,
            pending_tool_calls: self.machine.pending_calls().to_vec(),
            settled_results: self.machine.settled.clone(),
            pending_batch: self.machine.batch.clone(),
            stop,
            output,
            error: None,
            hooks: self.stored_hooks.clone(),
        })
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
    ctx: RunContext,
    durable: Option<(LeaseLoss, watch::Receiver<bool>)>,
) -> Interrupt {
    let cancel = ctx.cancellation();
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
