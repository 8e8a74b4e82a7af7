//! Each effect of a run, as the in-process runtime runs it, hooks included.

use super::{
    BatchPlan, CallOutcome, Folded, RunEffects, StepOpening, SubAgentOutcome, SubAgentRequest,
};
use crate::driver::stop_reason;
use crate::nesting;
use crate::tool_call::Settled;
use agentry_core::Content;
use agentry_core::hooks::{
    AfterToolBatch, BeforeStep, BeforeToolBatch, Events, MessageAdded, RunEnd, RunFailed, RunStart,
    StepDecision,
};
use agentry_core::{
    Decision, Error, Message, ModelResponse, PendingApproval, StopReason, ToolResult,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::time::Instant;

impl RunEffects {
    /// Reports the messages of the history from index `from` on to MessageAdded hooks (messages
    /// the caller added to its machine without running hooks: the input, tool results, feedback).
    /// Their run events are the caller's: it added them.
    pub async fn report_added(&mut self, from: usize) -> Result<(), Error> {
        if !self.wants(Events::MESSAGE_ADDED) {
            return Ok(());
        }
        let added: Vec<Arc<Message>> = self
            .driver
            .machine
            .messages
            .iter_shared()
            .skip(from)
            .cloned()
            .collect();
        let scope = self.driver.scope.clone();
        nesting::inside(scope.engine.clone(), async {
            for message in added {
                scope.hook(MessageAdded::new(message)).await?;
            }
            Ok(())
        })
        .await
    }

    /// Starts a run from a snapshot it did not run itself (a fork of another run): its start
    /// state is reported, so its own recording can rebuild its state at any step, as a new run's
    /// is. No RunStart hooks and no input: its history is the snapshot's.
    pub fn forked_start(&mut self) {
        self.driver.scope.report_start_state();
    }

    /// Starts a new run: RunStart hooks (which may rewrite the input and the state), then the
    /// input is added to the history, with its MessageAdded hooks. Returns the input as hooks
    /// left it.
    pub async fn run_start(&mut self, input: Content) -> Result<Content, Error> {
        let d = &mut self.driver;
        d.scope.report_start_state();
        let input = if d.scope.wants(Events::RUN_START) {
            let scope = d.scope.clone();
            nesting::inside(scope.engine.clone(), scope.hook(RunStart { input }))
                .await?
                .input
        } else {
            input
        };
        if let Some(m) = d.machine.add_input(input.clone()) {
            d.scope.added(m).await?;
        }
        Ok(input)
    }

    /// Opens step `step` (which the caller's machine began): BeforeStep hooks may skip it or
    /// stop the run.
    pub async fn before_step(&mut self, step: u32) -> Result<StepOpening, Error> {
        let d = &mut self.driver;
        d.scope.engine.set_step(step);
        d.machine.step = step;
        if !d.scope.wants(Events::BEFORE_STEP) {
            return Ok(StepOpening::Go);
        }
        let scope = d.scope.clone();
        let (ev, by) = nesting::inside(
            scope.engine.clone(),
            scope.hook_decided(BeforeStep::new(step)),
        )
        .await?;
        Ok(match ev.decision() {
            None => StepOpening::Go,
            Some(StepDecision::Skip) => StepOpening::Skip,
            Some(decision) => StepOpening::Stop(stop_reason(decision, by.as_deref())),
        })
    }

    /// The model turn of step `step`: BeforeModel, the around-model middleware, the streamed
    /// call with its TextDelta and Thinking hooks, AfterModel (with the retries it asks for:
    /// their feedback joins the history, and the rejected responses' tokens the usage). Returns
    /// the response as hooks left it, for [`accept_turn`](Self::accept_turn).
    pub async fn model_turn(&mut self, step: u32) -> Result<ModelResponse, Error> {
        let d = &mut self.driver;
        d.scope.engine.set_step(step);
        d.machine.step = step;
        let ctx = d.scope.engine.clone();
        nesting::inside(ctx, d.model_phase(step)).await
    }

    /// The compaction phase of a step, before its model turn: when the agent compacts its
    /// history and the prompt passed its threshold, BeforeCompact, the summarising call (or the
    /// window's note), CompactFailed and AfterCompact, as in-process. Returns what it folded, for
    /// the caller to fold in its own copy of the history ([`Folded::apply`]).
    pub async fn compact(&mut self) -> Result<Option<Folded>, Error> {
        let d = &mut self.driver;
        if d.def.compaction.is_none() {
            return Ok(None);
        }
        let ctx = d.scope.engine.clone();
        nesting::inside(ctx, Box::pin(d.compact_phase())).await
    }

    /// Accepts a model turn into the history (the machine gives its calls their ids), with its
    /// MessageAdded hooks.
    pub async fn accept_turn(&mut self, response: ModelResponse) -> Result<Arc<Message>, Error> {
        let d = &mut self.driver;
        let message = d.machine.accept_turn(response);
        let scope = d.scope.clone();
        nesting::inside(scope.engine.clone(), scope.added(message.clone())).await?;
        Ok(message)
    }

    /// Runs call `index` of the pending turn: BeforeTool (which may rewrite, block, mock or ask
    /// for approval), the tool through the around-tool middleware within its time limit (a
    /// sub-agent runs here as a child run), then AfterTool or ToolFailed. With `decided`, a
    /// person's decision on the call (which waited for it): ApprovalResolved hooks see it
    /// first.
    ///
    /// # Errors
    /// A hook's failure (it fails the run), or no pending call at `index`.
    pub async fn tool_call(
        &mut self,
        index: usize,
        decided: Option<(PendingApproval, Decision)>,
    ) -> Result<CallOutcome, Error> {
        let d = &mut self.driver;
        let Some(turn) = d.machine.pending.clone() else {
            return Err(Error::other(
                "the run has no pending tool calls; run a model turn that calls tools first",
            ));
        };
        if index >= turn.tool_calls().len() {
            return Err(Error::other(format!(
                "the pending turn has {} calls, not {}",
                turn.tool_calls().len(),
                index + 1
            )));
        }
        if let Some((pending, decision)) = decided {
            d.decisions.insert(pending.call_id.clone(), decision);
            d.last_paused = Some(vec![pending]);
            let ctx = d.scope.engine.clone();
            nesting::inside(ctx, d.resolved_by_person()).await?;
        }
        let ctx = d.scope.engine.clone();
        let settled = nesting::inside(ctx, d.tool_calls().tool_call(&turn, index)).await;
        d.decisions.clear();
        Ok(match settled? {
            Settled::Done(result) => CallOutcome::Done(result),
            Settled::Pending(pending) => CallOutcome::Pending(pending),
            Settled::Stop { result, reason, .. } => CallOutcome::Stop { result, reason },
            Settled::SubAgent(request) => CallOutcome::SubAgent(*request),
        })
    }

    /// BeforeToolBatch hooks for the calls of the pending turn, when some hook wants them: the
    /// order the calls start in and the calls they blocked. `None` when no hook wants them or
    /// the run has no pending calls (the calls start in the model's order).
    pub async fn before_tool_batch(&mut self) -> Result<Option<BatchPlan>, Error> {
        let d = &mut self.driver;
        let turn = match d.machine.pending.clone() {
            Some(turn) if d.scope.wants(Events::BEFORE_TOOL_BATCH) => turn,
            _ => return Ok(None),
        };
        let scope = d.scope.clone();
        let batch =
            nesting::inside(scope.engine.clone(), scope.hook(BeforeToolBatch::new(turn))).await?;
        Ok(Some(BatchPlan::of(&batch)))
    }

    /// AfterToolBatch hooks for the results of every call of the pending turn, in call order,
    /// before they join the history: returns them as the hooks left them.
    pub async fn after_tool_batch(
        &mut self,
        results: Vec<ToolResult>,
    ) -> Result<Vec<ToolResult>, Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::AFTER_TOOL_BATCH) {
            return Ok(results);
        }
        let scope = d.scope.clone();
        let ev = nesting::inside(
            scope.engine.clone(),
            scope.hook(AfterToolBatch::new(results)),
        )
        .await?;
        Ok(ev.into_results())
    }

    /// The earliest deadline a hook set on the run with [`RunContext::stop_at`] while these
    /// effects ran (the built-in guards' wall time, for one), as a wall-clock time, and the stop
    /// it brings. The effects do not enforce it: the caller's engine stops the run at that time,
    /// interrupting what is in flight, as in-process.
    ///
    /// [`RunContext::stop_at`]: agentry_core::RunContext::stop_at
    pub fn deadline(&self) -> Option<(SystemTime, StopReason)> {
        let (at, stop) = self.driver.scope.context().stop_deadline()?;
        let now = Instant::now();
        let wall = match at.checked_duration_since(now) {
            Some(ahead) => SystemTime::now() + ahead,
            None => SystemTime::now() - now.duration_since(at),
        };
        Some((wall, stop))
    }

    /// From now on, a call of a sub-agent settles as [`CallOutcome::SubAgent`] once its BeforeTool
    /// and BeforeSubAgent hooks ran, instead of running the sub-agent here: the caller runs it
    /// (a durable engine, as a run of its own) and closes the call with
    /// [`sub_agent_finished`](Self::sub_agent_finished).
    pub fn delegate_sub_agents(&mut self) {
        self.driver.delegate_sub_agents = true;
    }

    /// Closes call `index` of the pending turn, a sub-agent call handed over as `request`, with
    /// how the sub-agent's run ended: AfterSubAgent or SubAgentFailed hooks, then AfterTool or
    /// ToolFailed, as when the sub-agent runs in-process.
    ///
    /// # Errors
    /// A hook's failure (it fails the run), or no pending call at `index`.
    pub async fn sub_agent_finished(
        &mut self,
        index: usize,
        request: SubAgentRequest,
        outcome: SubAgentOutcome,
    ) -> Result<CallOutcome, Error> {
        let d = &mut self.driver;
        let turn = match d.machine.pending.clone() {
            Some(turn) if index < turn.tool_calls().len() => turn,
            _ => {
                return Err(Error::other(format!(
                    "the run has no pending call {}; run the sub-agent call's turn first",
                    index + 1
                )));
            }
        };
        let ctx = d.scope.engine.clone();
        let calls = d.tool_calls();
        let settled = nesting::inside(
            ctx,
            calls.sub_agent_finished(&turn, index, request, outcome),
        )
        .await;
        Ok(match settled? {
            Settled::Done(result) => CallOutcome::Done(result),
            Settled::Pending(pending) => CallOutcome::Pending(pending),
            Settled::Stop { result, reason, .. } => CallOutcome::Stop { result, reason },
            Settled::SubAgent(request) => CallOutcome::SubAgent(*request),
        })
    }

    /// Ends step `step`, which used `usage` (its `StepFinished` event says so): AfterStep
    /// hooks, which may stop the run (the stop reason).
    pub async fn end_step(
        &mut self,
        step: u32,
        usage: agentry_core::Usage,
    ) -> Result<Option<StopReason>, Error> {
        let d = &mut self.driver;
        d.scope.engine.set_step(step);
        let ctx = d.scope.engine.clone();
        nesting::inside(ctx, d.end_step(step, usage, false)).await
    }

    /// Stop hooks for `reason` (with the final answer when the run stops with one): returns the
    /// message a hook vetoed a natural stop with, if one did.
    pub async fn stop(
        &mut self,
        reason: StopReason,
        output: Option<&Value>,
    ) -> Result<Option<String>, Error> {
        let d = &mut self.driver;
        let ctx = d.scope.engine.clone();
        nesting::inside(ctx, d.stop_event(reason, output)).await
    }

    /// RunFailed hooks for a run that failed with `error`: the output and stop reason when a
    /// hook recovered, else `None` (the run fails with `error`).
    pub async fn recover(&mut self, error: Error) -> Result<Option<(Value, StopReason)>, Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::RUN_FAILED) {
            return Ok(None);
        }
        let error = Arc::new(error);
        let scope = d.scope.clone();
        let (ev, by) = nesting::inside(
            scope.engine.clone(),
            scope.hook_decided(RunFailed::new(error.clone())),
        )
        .await?;
        Ok(ev.recovery().map(|output| {
            let stop = StopReason::Recovered {
                hook: by.as_deref().unwrap_or_default().to_string(),
                error: error.to_string(),
            };
            (output.clone(), stop)
        }))
    }

    /// RunEnd hooks, once the run's outcome is recorded.
    pub async fn run_end(&mut self, stop: StopReason, output: Option<Value>) -> Result<(), Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::RUN_END) {
            return Ok(());
        }
        let ev = RunEnd::new(stop, output, d.machine.usage, d.machine.step);
        let scope = d.scope.clone();
        nesting::inside(scope.engine.clone(), scope.hook(ev)).await?;
        Ok(())
    }
}
