//! A run's course in the workflow: the effects the step machine asks for, each phase an
//! activity (the model step, the end of a step).

use super::{Exit, Loop};
use crate::activities::AgentActivities;
use crate::ledger::Ledger;
use crate::wire::{
    BeginInput, Done, EndStepInput, Ending, Failure, Opening as StepOpened, StepInput,
    WorkflowInput,
};
use agentry_core::hooks::Events;
use agentry_core::machine::{Ending as MachineEnding, Next, Opening, Rules, StepClosed, ToolsRan};
use agentry_core::{History, OutputSpec, RunEvent, RunMachine};
use serde_json::Value;

impl Loop {
    pub(super) async fn body(&mut self, mut request: WorkflowInput) -> Result<Ending, Exit> {
        let forked = request.forked.clone();
        if let Some(snapshot) = request.forked.as_mut() {
            // The begin activity reports a fork's start state; its history stays here, and
            // goes to the next activity.
            snapshot.messages = History::new();
        }
        let input = BeginInput {
            run_id: self.id.run_id.clone(),
            request,
        };
        let begun = Self::settle(
            self.activity(AgentActivities::begin, input, self.limits.hooks, true, None)
                .await,
        )?;
        let begun = self.accept(begun);
        self.plan = begun.plan;
        match forked {
            // A fork goes on from the history it was given, which its hooks have seen in the
            // run it came from; the next activity is given all of it.
            Some(snapshot) => {
                self.machine = RunMachine::restore(&snapshot);
                self.first_step = self.machine.step;
                self.reported = self.machine.messages.len();
                self.ledger = Ledger::resumed(&self.machine.messages, 0);
            }
            None => {
                self.machine.add_input(begun.input);
                self.synced();
                // The begin activity reported the input to MessageAdded hooks.
                self.reported = self.machine.messages.len();
            }
        }
        self.steps().await
    }

    /// The rules the run's machine applies, from the run's plan.
    pub(super) fn rules(&self) -> Result<Rules, Exit> {
        let rules = Rules::new(self.id.agent.clone(), self.plan.max_steps);
        Ok(match &self.plan.output_schema {
            Some(schema) => {
                let spec = OutputSpec::new(schema.clone())
                    .map_err(|e| Exit::Failed(Failure::own(format!("the output schema: {e}"))))?;
                rules.with_output(spec, self.plan.output_retries)
            }
            None => rules,
        })
    }

    /// Executes the effects the run's machine asks for, each phase an activity, until it ends
    /// (or continues as a new execution before a step).
    pub(super) async fn steps(&mut self) -> Result<Ending, Exit> {
        let rules = self.rules()?;
        self.machine.set_rules(rules);
        let mut next = self.machine.next_effect();
        loop {
            next = match next {
                Next::OpenStep(step) => {
                    if self.cancelled_now() {
                        return Err(Exit::Cancelled);
                    }
                    if self.should_continue() {
                        return Err(Exit::Continue);
                    }
                    self.open_step(step).await?
                }
                Next::RunTools { .. } => {
                    let ran = self.run_tools().await?;
                    let done = matches!(ran, ToolsRan::Done(_));
                    let from = self.machine.messages.len();
                    let next = self.machine.tools_ran(ran);
                    self.added_from(from);
                    if done && self.cancelled_now() {
                        return Err(Exit::Cancelled);
                    }
                    next
                }
                Next::CloseStep { step, answer, .. } => {
                    let closed = self.end_step(step, answer).await?;
                    let from = self.machine.messages.len();
                    let next = self.machine.step_closed(closed);
                    self.added_from(from);
                    next
                }
                // The workflow's history is its checkpoint.
                Next::Save => self.machine.saved(),
                Next::End(MachineEnding {
                    stop,
                    output,
                    stop_hooks_ran,
                }) => {
                    return match stop_hooks_ran {
                        true => Ok(Ending::Stopped { stop, output }),
                        false => Err(Exit::Stop(stop)),
                    };
                }
                Next::Fail(error) => return Err(Exit::Failed(Failure::own(error.to_string()))),
            };
        }
    }

    /// Opens step `step` in a model step activity: BeforeStep, compaction and the model turn;
    /// feeds the machine how it opened.
    pub(super) async fn open_step(&mut self, step: u32) -> Result<Next, Exit> {
        let input = StepInput {
            run: self.view(),
            report_from: self.reported,
            step,
        };
        let limit = self.limits.model_step;
        let Done {
            value: done,
            state,
            events,
            ..
        } = Self::settle(
            self.activity(AgentActivities::model_step, input, limit, false, None)
                .await,
        )?;
        self.state = state;
        // BeforeStep hooks ran before the step started, as in-process.
        self.absorb(done.opened);
        if !matches!(done.opening, StepOpened::Stop(_)) {
            self.emit(RunEvent::StepStarted {
                step,
                agent_path: self.id.agent.as_str().into(),
                run_id: None,
            });
        }
        if let Some(folded) = &done.folded {
            folded.apply(&mut self.machine.messages);
            self.ledger.rewound(folded.start);
        }
        self.absorb(events);
        let opening = match done.opening {
            StepOpened::Go => {
                let Some(response) = done.response else {
                    return Err(Exit::Failed(Failure::own("a model step returned no turn")));
                };
                for message in done.added {
                    self.machine.push(message);
                }
                self.machine.usage = done.usage;
                self.machine.retried_usage = done.retried_usage;
                if self.cancelled_now() {
                    return Err(Exit::Cancelled);
                }
                Opening::Turn(response)
            }
            StepOpened::Skip => Opening::Skip,
            StepOpened::Stop(stop) => Opening::Stop(stop),
        };
        let turn = matches!(opening, Opening::Turn(_));
        let before = self.machine.messages.len();
        let next = self.machine.opened(opening);
        // The activity accepted the turn too, and reported it: its worker keeps the history up
        // to it. What the machine added after it (feedback on an invalid answer) is the
        // workflow's own.
        self.reported = before + usize::from(turn);
        if turn {
            self.ledger.sync_upto(&self.machine.messages, self.reported);
        }
        self.added_from(self.reported);
        if matches!(next, Next::RunTools { .. }) {
            self.machine.batch = done.batch;
        }
        Ok(next)
    }

    /// Ends a step: AfterStep and (for a final answer) Stop hooks, in an activity when some hook
    /// wants them or has messages to see.
    pub(super) async fn end_step(
        &mut self,
        step: u32,
        final_output: Option<Value>,
    ) -> Result<StepClosed, Exit> {
        let needed = self.wants(Events::AFTER_STEP | Events::MESSAGE_ADDED)
            || (final_output.is_some() && self.wants(Events::STOP));
        if !needed {
            self.step_finished(step);
            return Ok(StepClosed::default());
        }
        let input = EndStepInput {
            run: self.view(),
            report_from: self.reported,
            step,
            usage: self.machine.step_usage(),
            final_output,
        };
        let end = Self::settle(
            self.activity(
                AgentActivities::end_step,
                input,
                self.limits.hooks,
                true,
                None,
            )
            .await,
        )?;
        self.reported = self.machine.messages.len();
        Ok(self.accept(end))
    }
}
