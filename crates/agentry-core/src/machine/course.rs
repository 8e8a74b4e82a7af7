//! The course of a run: which effect comes next, decided once for every runtime (see the
//! [`machine`](super) module docs).

use super::{RunMachine, Turn, Verdict};
use crate::agent::{AgentDef, OutputSpec};
use crate::{Error, FinishReason, Message, ModelResponse, PendingApproval, StopReason, ToolResult};
use serde_json::Value;
use std::sync::Arc;

/// What the machine applies to a run: its agent's limits and output rules.
#[derive(Clone, Debug)]
pub struct Rules {
    /// The agent's name, as its errors give it.
    pub agent: String,
    /// Steps a run may take.
    pub max_steps: u32,
    /// The schema a final answer must match, when the agent has one.
    pub output: Option<OutputSpec>,
    /// Invalid final answers sent back to the model before the run fails.
    pub output_retries: u32,
}

impl Rules {
    /// The rules of agent `agent`, which may take `max_steps` steps and answers in text.
    pub fn new(agent: impl Into<String>, max_steps: u32) -> Self {
        Rules {
            agent: agent.into(),
            max_steps,
            output: None,
            output_retries: 0,
        }
    }

    /// The rules of an agent's definition.
    pub fn of(def: &AgentDef) -> Self {
        Rules {
            agent: def.name.to_string(),
            max_steps: def.max_steps,
            output: def.output.clone(),
            output_retries: def.output_retries,
        }
    }

    /// Final answers must match `output`; an invalid one is sent back up to `retries` times.
    pub fn with_output(mut self, output: OutputSpec, retries: u32) -> Self {
        self.output = Some(output);
        self.output_retries = retries;
        self
    }
}

impl Default for Rules {
    /// No limit on steps, any text accepted.
    fn default() -> Self {
        Rules::new("", u32::MAX)
    }
}

/// The next effect a run needs: see the [`machine`](super) module docs.
#[derive(Debug)]
#[must_use = "the run goes on only when its next effect is executed"]
pub enum Next {
    /// Open step `n` (1-based): BeforeStep hooks, then compaction and the model turn. Feed
    /// [`RunMachine::opened`].
    OpenStep(u32),
    /// Run the calls of the pending turn of step `step`, after checkpointing the turn when
    /// `save_turn` (a process that dies then re-issues them with the same ids). Feed
    /// [`RunMachine::tools_ran`].
    RunTools {
        /// The step.
        step: u32,
        /// Checkpoint before the calls run.
        save_turn: bool,
    },
    /// Close step `step`: AfterStep hooks and, with `answer`, Stop hooks for the final answer
    /// (which may veto it); checkpoint the step when `save`. Feed [`RunMachine::step_closed`].
    CloseStep {
        /// The step.
        step: u32,
        /// The final answer the step gave, for Stop hooks.
        answer: Option<Value>,
        /// Checkpoint the step (its outcome is checkpointed instead when it ends the run).
        save: bool,
    },
    /// Checkpoint the run (a Stop hook vetoed its answer: the model hears why next). Feed
    /// [`RunMachine::saved`].
    Save,
    /// The run ends.
    End(Ending),
    /// The run fails.
    Fail(Error),
}

/// How a run ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Ending {
    /// Why it stopped.
    pub stop: StopReason,
    /// Its output, when it has one.
    pub output: Option<Value>,
    /// True when Stop hooks saw this stop already (a final answer, at the end of its step);
    /// otherwise the runtime fires them before the run's end.
    pub stop_hooks_ran: bool,
}

impl Ending {
    fn stopped(stop: StopReason) -> Self {
        Ending {
            stop,
            output: None,
            stop_hooks_ran: false,
        }
    }
}

/// How a step opened: what [`Next::OpenStep`] gives.
#[derive(Clone, Debug, PartialEq)]
pub enum Opening {
    /// BeforeStep hooks skipped the step: it counts, with no model turn.
    Skip,
    /// BeforeStep hooks stopped the run before the step: it does not count.
    Stop(StopReason),
    /// The model's turn, as hooks left it.
    Turn(ModelResponse),
}

/// How the calls of a turn settled: what [`Next::RunTools`] gives.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolsRan {
    /// Every call has its result, in call order.
    Done(Vec<ToolResult>),
    /// Some calls wait for a person's decision: the run pauses with the step open; the results
    /// of the calls that settled are kept until the others are decided.
    Paused {
        /// The calls that wait.
        pending: Vec<PendingApproval>,
        /// The results of those that settled.
        settled: Vec<ToolResult>,
    },
    /// A person rejected call `call_id` and stopped the run: every call has a result, in call
    /// order.
    Stopped {
        /// The rejected call.
        call_id: String,
        /// Why.
        reason: String,
        /// The results.
        results: Vec<ToolResult>,
    },
}

/// What the end of a step decided: what [`Next::CloseStep`] gives.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepClosed {
    /// An AfterStep hook stopped the run.
    pub stop: Option<StopReason>,
    /// A Stop hook vetoed the final answer: the message the model gets.
    pub veto: Option<String>,
}

/// An interruption a runtime noticed: what [`RunMachine::interrupt`] takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Interruption {
    /// The run was cancelled.
    Cancelled,
    /// A deadline a hook set passed: the run stops for this reason.
    Deadline(StopReason),
}

/// Where a run is in its course.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum Phase {
    /// Before a step (the first, or the next).
    #[default]
    Between,
    /// Step `n` is opening: it does not count yet.
    Opening(u32),
    /// The calls of step `n` run.
    Tools(u32),
    /// Step `step` is closing; `then` says what follows.
    Closing { step: u32, then: Then },
    /// A veto was added: the run is saved before the next step.
    Vetoed,
    /// The run ended or failed.
    Over,
}

/// What follows the close of a step.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Then {
    /// The next step, unless AfterStep hooks stop the run.
    Go,
    /// The run ends with this final answer, unless a Stop hook vetoes it.
    Answer(Value),
    /// The run ends for this reason, whatever AfterStep hooks say.
    Stop(StopReason),
}

impl RunMachine {
    /// The rules the machine applies (set them before the run's first effect).
    pub fn set_rules(&mut self, rules: Rules) {
        self.rules = Arc::new(rules);
    }

    /// The rules the machine applies.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The step under way, or the last one when none is.
    pub fn current_step(&self) -> u32 {
        match &self.phase {
            Phase::Opening(step) | Phase::Tools(step) | Phase::Closing { step, .. } => *step,
            Phase::Between | Phase::Vetoed | Phase::Over => self.step,
        }
    }

    /// True once the run ended or failed.
    pub fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    /// The messages the last fed result added to the history (the model's turn, tool results,
    /// feedback, a veto), for MessageAdded hooks.
    pub fn added(&self) -> impl Iterator<Item = &Arc<Message>> + '_ {
        (self.added_from..self.messages.len()).filter_map(|i| self.messages.get_shared(i))
    }

    /// The next effect: the first step (or, for a run restored with a pending turn, its calls),
    /// or the step after a [`Next::Save`].
    pub fn next_effect(&mut self) -> Next {
        self.added_from = self.messages.len();
        match self.phase {
            Phase::Between | Phase::Vetoed => self.open_next(),
            Phase::Tools(step) => Next::RunTools {
                step,
                save_turn: false,
            },
            _ => self.misfed("asked for the next effect"),
        }
    }

    /// Feeds how step [`Next::OpenStep`] named opened.
    pub fn opened(&mut self, opening: Opening) -> Next {
        self.added_from = self.messages.len();
        let Phase::Opening(step) = self.phase else {
            return self.misfed("fed a step's opening");
        };
        let response = match opening {
            Opening::Stop(stop) => return self.end(Ending::stopped(stop)),
            Opening::Skip => {
                self.step = step;
                return self.close(step, Then::Go, None, true);
            }
            Opening::Turn(response) => response,
        };
        self.step = step;
        let aborted = match &response.finish_reason {
            FinishReason::Aborted(reason) => Some(reason.clone()),
            _ => None,
        };
        let (message, turn) = self.accept_response(response);
        if let Some(reason) = aborted {
            return self.close(step, Then::Stop(StopReason::Aborted { reason }), None, true);
        }
        match turn {
            Turn::Tools => {
                self.phase = Phase::Tools(step);
                Next::RunTools {
                    step,
                    save_turn: true,
                }
            }
            // Judged as the history holds it: the answer is not copied.
            Turn::Final => match self.judge_final(&message.text()) {
                Verdict::Accept(output) => {
                    self.close(step, Then::Answer(output.clone()), Some(output), false)
                }
                Verdict::Retry(feedback) => {
                    self.add_user(feedback);
                    self.close(step, Then::Go, None, true)
                }
                Verdict::Fail { attempts, error } => {
                    self.phase = Phase::Over;
                    Next::Fail(Error::InvalidOutput {
                        agent: self.rules.agent.clone(),
                        attempts,
                        error,
                    })
                }
            },
        }
    }

    /// Feeds how the calls [`Next::RunTools`] named settled.
    pub fn tools_ran(&mut self, ran: ToolsRan) -> Next {
        self.added_from = self.messages.len();
        let Phase::Tools(step) = self.phase else {
            return self.misfed("fed a turn's tool results");
        };
        match ran {
            ToolsRan::Done(results) => {
                self.accept_tool_results(results);
                self.close(step, Then::Go, None, true)
            }
            ToolsRan::Paused { pending, settled } => {
                // The step stays open: the run resumes into it once the calls are decided.
                self.settled = settled;
                self.end(Ending::stopped(StopReason::AwaitingApproval { pending }))
            }
            ToolsRan::Stopped {
                call_id,
                reason,
                results,
            } => {
                self.accept_tool_results(results);
                let stop = StopReason::StoppedByHuman { call_id, reason };
                self.close(step, Then::Stop(stop), None, true)
            }
        }
    }

    /// Feeds what the end of the step [`Next::CloseStep`] named decided.
    pub fn step_closed(&mut self, closed: StepClosed) -> Next {
        self.added_from = self.messages.len();
        let Phase::Closing { then, .. } = std::mem::take(&mut self.phase) else {
            return self.misfed("fed a step's end");
        };
        match then {
            Then::Answer(output) => match closed.veto {
                Some(veto) => {
                    self.add_user(veto);
                    self.phase = Phase::Vetoed;
                    Next::Save
                }
                None => self.end(Ending {
                    stop: StopReason::FinalAnswer,
                    output: Some(output),
                    stop_hooks_ran: true,
                }),
            },
            Then::Stop(stop) => self.end(Ending::stopped(stop)),
            Then::Go => match closed.stop {
                Some(stop) => self.end(Ending::stopped(stop)),
                None => self.open_next(),
            },
        }
    }

    /// Feeds the end of the checkpoint [`Next::Save`] asked for.
    pub fn saved(&mut self) -> Next {
        self.next_effect()
    }

    /// Ends the run for an interruption, whatever the machine was waiting for: a cancellation
    /// takes back a step that had not closed; a deadline keeps it and closes its pending turn (each call keeps a result it settled with, the others get an error
    /// result saying why), so the history stays well-formed. The messages it added are in
    /// [`added`](Self::added).
    pub fn interrupt(&mut self, why: Interruption) -> Ending {
        self.added_from = self.messages.len();
        let phase = std::mem::replace(&mut self.phase, Phase::Over);
        // A step still opening never counted: nothing to take back.
        match why {
            Interruption::Cancelled => {
                if let Phase::Tools(step) | Phase::Closing { step, .. } = phase {
                    self.step = step - 1;
                }
                Ending::stopped(StopReason::Cancelled)
            }
            Interruption::Deadline(stop) => {
                self.cut_short(&stop);
                Ending::stopped(stop)
            }
        }
    }

    /// The next step, or the end when the step limit is reached.
    fn open_next(&mut self) -> Next {
        if self.step >= self.rules.max_steps {
            let limit = self.rules.max_steps;
            return self.end(Ending::stopped(StopReason::MaxSteps { limit }));
        }
        let step = self.step + 1;
        self.phase = Phase::Opening(step);
        self.step_opened_usage = self.usage;
        Next::OpenStep(step)
    }

    fn close(&mut self, step: u32, then: Then, answer: Option<Value>, save: bool) -> Next {
        self.phase = Phase::Closing { step, then };
        Next::CloseStep { step, answer, save }
    }

    fn end(&mut self, ending: Ending) -> Next {
        self.phase = Phase::Over;
        Next::End(ending)
    }

    /// A result fed while the machine waited for another: a runtime's bug, which fails the run
    /// rather than guess.
    fn misfed(&mut self, what: &str) -> Next {
        let phase = std::mem::replace(&mut self.phase, Phase::Over);
        Next::Fail(Error::other(format!(
            "the run's step machine was {what} while it was at {phase:?}: a runtime drove it out of order"
        )))
    }
}
