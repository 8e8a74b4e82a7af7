//! A run's course, as the step machine decides it: the effects it asks for, executed with
//! their hooks (BeforeStep, the model turn, the tool phase, AfterStep and Stop).

use super::{CANCELLED, Driver, Ending, Start, stop_reason};
use agentry_core::hooks::{
    AfterStep, BeforeStep, Events, Resolver, RunStart, StepDecision, Stop, StoppedByHuman,
};
use agentry_core::machine::{Interruption, Next, Opening, Rules, StepClosed, ToolsRan};
use agentry_core::{Error, RunEvent, StopReason};
use serde_json::Value;

impl Driver {
    pub(super) async fn body(&mut self, start: Start) -> Result<Ending, Error> {
        self.machine.set_rules(Rules::of(&self.def));
        if !self.tool_sources.is_empty() {
            Box::pin(self.refresh_tools()).await?;
        }
        match start {
            Start::New(input) => {
                if self.continues_session() {
                    // Boxed: rare, and it would otherwise grow every run's future.
                    Box::pin(self.continue_session()).await?;
                }
                self.scope.report_start_state();
                let input = if self.scope.wants(Events::RUN_START) {
                    self.scope.hook(RunStart { input }).await?.input
                } else {
                    input
                };
                if let Some(m) = self.machine.add_input(input) {
                    self.scope.added(m).await?;
                }
                // Handed over without waiting, like a step's end: the first model turn goes on
                // while it is written, and the next checkpoint waits for it.
                self.queued_checkpoint().await?;
            }
            Start::Resume { fresh } => {
                if fresh {
                    self.scope.report_start_state();
                }
                // Saved first, under the lease just claimed: a process that lost the run to
                // another fails here, before any effect.
                self.checkpoint(None, None).await?;
                Box::pin(self.resolved_by_person()).await?;
            }
        }
        self.steps().await
    }

    /// Executes the effects the run's machine asks for until it ends (or is cancelled between
    /// two of them).
    pub(super) async fn steps(&mut self) -> Result<Ending, Error> {
        let mut next = self.machine.next_effect();
        loop {
            next = match next {
                Next::OpenStep(step) => {
                    if self.scope.context().is_cancelled() {
                        return Ok(CANCELLED);
                    }
                    // A deadline that passed while nothing awaited (a hook that asked to stop
                    // now, from a step that never yielded) is honoured here, before the step's
                    // first effect.
                    if let Some(stop) = self.scope.engine.passed_deadline() {
                        Next::End(self.machine.interrupt(Interruption::Deadline(stop)))
                    } else {
                        let Some(opening) = self.open_step(step).await? else {
                            return Ok(CANCELLED);
                        };
                        let next = self.machine.opened(opening);
                        if self.scope.reports_messages() {
                            self.announce().await?;
                        }
                        next
                    }
                }
                Next::RunTools { step, save_turn } => {
                    self.scope.engine.set_step(step);
                    // The turn is saved before its calls run: a process that dies now resumes
                    // by re-issuing them, with the same call ids (and idempotency keys).
                    if save_turn && self.rt.store.is_some() {
                        self.checkpoint(None, None).await?;
                    }
                    let phase = self.run_tools().await?;
                    if let ToolsRan::Paused { pending, .. } = &phase.ran {
                        let p = pending.clone();
                        self.scope
                            .engine
                            .send_event(|path| RunEvent::AwaitingApproval {
                                pending: p,
                                agent_path: path.clone(),
                                run_id: None,
                            });
                    }
                    let stopped = match &phase.ran {
                        ToolsRan::Stopped {
                            call_id, reason, ..
                        } => Some((call_id.clone(), reason.clone())),
                        _ => None,
                    };
                    let done = matches!(phase.ran, ToolsRan::Done(_));
                    let next = self.machine.tools_ran(phase.ran);
                    if self.scope.reports_messages() {
                        self.announce().await?;
                    }
                    if let (Some((call_id, reason)), Some(by)) = (stopped, phase.stopped_by)
                        && self.scope.wants(Events::STOPPED_BY_HUMAN)
                    {
                        Box::pin(self.scope.hook(StoppedByHuman::new(call_id, reason, by))).await?;
                    }
                    if done && self.scope.context().is_cancelled() {
                        return Ok(CANCELLED);
                    }
                    next
                }
                Next::CloseStep { step, answer, save } => {
                    // A step that answered is not checkpointed on its own: the outcome (or a Stop
                    // hook's veto) is, right after.
                    let usage = self.machine.step_usage();
                    let stop = self.end_step(step, usage, save).await?;
                    let veto = match &answer {
                        Some(output) => {
                            self.stop_event(StopReason::FinalAnswer, Some(output))
                                .await?
                        }
                        None => None,
                    };
                    let next = self.machine.step_closed(StepClosed { stop, veto });
                    if self.scope.reports_messages() {
                        self.announce().await?;
                    }
                    next
                }
                Next::Save => {
                    self.checkpoint(None, None).await?;
                    self.machine.saved()
                }
                Next::End(ending) => {
                    if !ending.stop_hooks_ran {
                        self.stop_event(ending.stop.clone(), None).await?;
                    }
                    return Ok((ending.output, ending.stop));
                }
                Next::Fail(error) => return Err(error),
            };
        }
    }

    /// Opens step `step`: BeforeStep hooks (which may skip it or stop the run), then compaction
    /// and the model turn. `None` when the run was cancelled meanwhile.
    pub(super) async fn open_step(&mut self, step: u32) -> Result<Option<Opening>, Error> {
        if !self.tool_sources.is_empty() && step > 1 {
            // Boxed: rare, and it would otherwise grow every step's future.
            Box::pin(self.refresh_tools()).await?;
        }
        self.scope.engine.set_step(step);
        if self.scope.wants(Events::BEFORE_STEP) {
            let (ev, by) = self.scope.hook_decided(BeforeStep::new(step)).await?;
            if self.scope.context().is_cancelled() {
                return Ok(None);
            }
            match ev.decision() {
                Some(StepDecision::Skip) => {
                    self.step_started(step);
                    return Ok(Some(Opening::Skip));
                }
                Some(decision) => {
                    return Ok(Some(Opening::Stop(stop_reason(decision, by.as_deref()))));
                }
                None => {}
            }
        }
        self.step_started(step);
        if self.def.compaction.is_some() {
            // Boxed: the phase is large and most agents never compact, so their runs' futures
            // stay small.
            Box::pin(self.compact_phase()).await?;
        }
        let response = self.model_phase(step).await?;
        if self.scope.context().is_cancelled() {
            return Ok(None);
        }
        Ok(Some(Opening::Turn(response)))
    }

    /// Reports the messages the machine's last step added to the history (MessageAdded hooks,
    /// the event stream).
    pub(super) async fn announce(&self) -> Result<(), Error> {
        for message in self.machine.added() {
            self.scope.added(message.clone()).await?;
        }
        Ok(())
    }

    /// Fires ApprovalResolved for the decisions a person gave (when a paused run resumes).
    pub(crate) async fn resolved_by_person(&mut self) -> Result<(), Error> {
        let pending = match self.last_paused.take() {
            Some(p) => p,
            None => return Ok(()),
        };
        for p in pending {
            if let Some(decision) = self.decisions.get(&p.call_id).cloned() {
                self.tool_calls()
                    .approval_resolved(&decision, &Resolver::Person);
                if !self.scope.wants(Events::APPROVAL_RESOLVED) {
                    continue;
                }
                let ev = agentry_core::hooks::ApprovalResolved::new(p, decision, Resolver::Person);
                self.scope.hook(ev).await?;
            }
        }
        Ok(())
    }

    pub(super) fn step_started(&self, step: u32) {
        self.scope.engine.send_event(|p| RunEvent::StepStarted {
            step,
            agent_path: p.clone(),
            run_id: None,
        });
    }

    /// Ends a step that used `usage`: AfterStep (which may stop the run) and, when `save`, a
    /// checkpoint.
    pub(crate) async fn end_step(
        &mut self,
        step: u32,
        usage: agentry_core::Usage,
        save: bool,
    ) -> Result<Option<StopReason>, Error> {
        self.scope.engine.send_event(|p| RunEvent::StepFinished {
            step,
            usage,
            agent_path: p.clone(),
            run_id: None,
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
}
