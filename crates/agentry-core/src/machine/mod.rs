//! The step machine: the pure, serializable part of a run that decides what happens next.
//!
//! It holds the history, step count, usage and pending tool calls and decides the run's course.
//! It never calls a model, a tool or a hook: runtimes do, and feed it the results. That is what
//! lets the in-process runtime and a durable one drive the same runs, with no loop of their own.
//!
//! # The course of a run
//!
//! A runtime asks the machine for the next effect with [`RunMachine::next_effect`], executes it, and
//! feeds its result back with the method named for it; the answer is the effect after it:
//!
//! | effect | the runtime | then feeds |
//! |---|---|---|
//! | [`Next::OpenStep`] | BeforeStep hooks; unless they skip the step or stop the run, compaction and the model turn | [`RunMachine::opened`] |
//! | [`Next::RunTools`] | checkpoints the turn when `save_turn`, then runs its calls ([`RunMachine::pending_calls`]) | [`RunMachine::tools_ran`] |
//! | [`Next::CloseStep`] | AfterStep hooks; Stop hooks for `answer`; a checkpoint when `save` | [`RunMachine::step_closed`] |
//! | [`Next::Save`] | a checkpoint | [`RunMachine::saved`] |
//! | [`Next::End`] | Stop hooks unless they ran, then the run's end | nothing: the run is over |
//! | [`Next::Fail`] | the run fails with the error | nothing |
//!
//! Step counting, skips, stops, output retries, vetoes and the step a cancellation cuts off are
//! decided here and nowhere else. An interruption the runtime notices (a cancellation, a deadline
//! that passed) is fed with [`RunMachine::interrupt`] whatever the machine was waiting for.
//!
//! A step counts once it opened (its model turn accepted, or BeforeStep hooks skipped it): a step
//! they stopped never counts, nor does one still opening when the run is interrupted. A
//! cancellation also takes back a step that opened but did not close (the run resumes from the
//! end of the step before); a deadline leaves it counted, its pending calls closed.
//!
//! ```
//! use agentry_core::{ModelResponse, RunMachine, StopReason};
//! use agentry_core::machine::{Next, Opening, Rules, StepClosed};
//!
//! let mut machine = RunMachine::new();
//! machine.set_rules(Rules::new("helper", 5));
//! machine.add_user("hi");
//! let Next::OpenStep(1) = machine.next_effect() else { unreachable!() };
//! let next = machine.opened(Opening::Turn(ModelResponse::text("hello")));
//! let Next::CloseStep { step: 1, answer: Some(_), .. } = next else { unreachable!() };
//! let Next::End(ending) = machine.step_closed(StepClosed::default()) else { unreachable!() };
//! assert_eq!(ending.stop, StopReason::FinalAnswer);
//! assert_eq!(machine.step, 1);
//! ```

mod course;
mod snapshot;

pub use course::{Ending, Interruption, Next, Opening, Rules, StepClosed, ToolsRan};
pub use snapshot::{RunSnapshot, SNAPSHOT_VERSION};

use crate::{Content, History, Message, ModelResponse, StopReason, ToolCall, ToolResult, Usage};
use course::Phase;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// What a model turn asked for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Turn {
    /// Run the tool calls of the turn (see [`RunMachine::pending_calls`]).
    Tools,
    /// A final answer.
    Final,
}

/// Whether a final answer is acceptable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Accepted: the output value (a JSON string for text agents).
    Accept(Value),
    /// Not acceptable: send this message back and go on.
    Retry(String),
    /// Not acceptable and out of attempts.
    Fail {
        /// Attempts made.
        attempts: u32,
        /// The last problem.
        error: String,
    },
}

/// The live, serializable part of a run. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct RunMachine {
    /// The history.
    pub messages: History,
    /// Steps started.
    pub step: u32,
    /// Tokens used, by every model call (responses hooks rejected included).
    pub usage: Usage,
    /// The part of `usage` spent on responses that AfterModel hooks rejected (asked to retry).
    pub retried_usage: Usage,
    /// Model turns accepted.
    pub model_calls: u32,
    /// Invalid final answers sent back so far.
    pub output_attempts: u32,
    /// The model turn whose tool calls are waiting for results (shared with the history).
    pub pending: Option<Arc<Message>>,
    /// Results of pending calls that already settled, while others wait.
    pub settled: Vec<ToolResult>,
    /// What BeforeToolBatch hooks decided for the pending calls, once they ran on them.
    pub batch: Option<crate::hooks::BatchPlan>,
    /// The ids of the tool calls of this run's model turns (see [`RunMachine::accept_response`]).
    call_ids: HashSet<String>,
    /// Where the run is in its course.
    phase: Phase,
    /// What the machine applies to the run.
    rules: Arc<Rules>,
    /// The history's length before the last fed result (see [`RunMachine::added`]).
    added_from: usize,
    /// `usage` when the step under way opened (see [`RunMachine::step_usage`]).
    step_opened_usage: Usage,
}

impl RunMachine {
    /// A machine for a new run.
    pub fn new() -> Self {
        RunMachine::default()
    }

    /// The machine of a snapshot.
    pub fn restore(s: &RunSnapshot) -> Self {
        RunMachine {
            call_ids: call_ids_in(&s.messages),
            messages: s.messages.clone(),
            step: s.step,
            usage: s.usage,
            step_opened_usage: s.usage,
            retried_usage: s.retried_usage,
            model_calls: s.model_calls,
            output_attempts: s.output_attempts,
            pending: (!s.pending_tool_calls.is_empty()).then(|| {
                Arc::new(Message::Assistant {
                    content: Content::new(),
                    thinking: None,
                    tool_calls: s.pending_tool_calls.clone(),
                })
            }),
            settled: s.settled_results.clone(),
            batch: s.pending_batch.clone(),
            phase: match s.pending_tool_calls.is_empty() {
                true => Phase::Between,
                false => Phase::Tools(s.step),
            },
            rules: Arc::default(),
            added_from: s.messages.len(),
        }
    }

    /// Starts the run's history with `messages` (a session's earlier history): the calls in it
    /// count as this run's, so no new call takes one of their ids.
    pub fn set_history(&mut self, messages: History) {
        self.call_ids = call_ids_in(&messages);
        self.messages = messages;
    }

    /// The tool calls waiting for results.
    pub fn pending_calls(&self) -> &[ToolCall] {
        self.pending.as_deref().map_or(&[], Message::tool_calls)
    }

    /// The settled result of the pending call `call_id`, if it settled.
    pub fn settled_result(&self, call_id: &str) -> Option<&ToolResult> {
        self.settled.iter().find(|r| r.call_id == call_id)
    }

    /// Closes the pending turn of a run interrupted by `stop` (a deadline passed): each call
    /// keeps the result it settled with, the others get an error result saying why, so the
    /// history stays well-formed. Adds nothing without a pending turn.
    fn cut_short(&mut self, stop: &StopReason) {
        if self.pending.is_none() {
            return;
        }
        let results = self
            .pending_calls()
            .iter()
            .map(|call| match self.settled_result(&call.id) {
                Some(result) => result.clone(),
                None => ToolResult::error(
                    &call.id,
                    &call.name,
                    format!("the run stopped before this call's result was recorded: {stop}"),
                ),
            })
            .collect();
        self.accept_tool_results(results)
    }

    /// Appends a user message.
    pub fn add_user(&mut self, content: impl Into<Content>) -> Arc<Message> {
        self.push(Message::user(content))
    }

    /// Appends the run's input (after RunStart hooks) as a user message, unless it is empty: a
    /// hook that erased it (a blocked prompt) leaves no empty turn in the history.
    pub fn add_input(&mut self, input: Content) -> Option<Arc<Message>> {
        (!input.is_empty()).then(|| self.add_user(input))
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) -> Arc<Message> {
        let m = Arc::new(message);
        self.messages.push(m.clone());
        m
    }

    /// The tokens used since the step under way opened (by its model turn, the retries an
    /// AfterModel hook asked for, a compaction's summary); since the machine was restored, for
    /// a step it was restored in the middle of.
    pub fn step_usage(&self) -> Usage {
        self.usage.since(&self.step_opened_usage)
    }

    /// Records a model response that an AfterModel hook rejected (asked to retry): its tokens
    /// count in the run's usage, and in its retried usage.
    pub fn reject_response(&mut self, usage: Usage) {
        self.usage += usage;
        self.retried_usage += usage;
    }

    /// Accepts a model turn: appends the assistant message and records usage and, when it calls
    /// tools, the pending turn (the message itself, shared: no call is copied).
    ///
    /// Every call of a run gets an id of its own, so that
    /// [`ToolCtx::idempotency_key`](crate::ToolCtx::idempotency_key) tells calls apart: a call
    /// whose id is empty, or taken by an earlier call of the run (providers that omit ids, or
    /// number them per turn, as some local servers do), is given `call_<turn>_<index>` (the
    /// turn's number in the run, the call's in the turn). The ids are assigned here, before the
    /// turn is checkpointed, so a resumed run issues its calls with the same ones.
    pub(crate) fn accept_response(&mut self, mut response: ModelResponse) -> (Arc<Message>, Turn) {
        self.usage += response.usage;
        self.model_calls += 1;
        for (index, call) in response.tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() || self.call_ids.contains(&call.id) {
                let mut id = format!("call_{}_{index}", self.model_calls);
                while self.call_ids.contains(&id) {
                    id.push('_');
                }
                call.id = id;
            }
            self.call_ids.insert(call.id.clone());
        }
        let calls_tools = !response.tool_calls.is_empty();
        let message = self.push(Message::Assistant {
            content: response.text.into(),
            thinking: response.thinking,
            tool_calls: response.tool_calls,
        });
        if calls_tools {
            self.pending = Some(message.clone());
            (message, Turn::Tools)
        } else {
            (message, Turn::Final)
        }
    }

    /// Accepts a model turn outside the run's course (giving its calls their ids as [`opened`](Self::opened) does): for
    /// an engine's own view of a run, such as a durable runtime's effect that runs the hooks of
    /// a turn its workflow accepts through [`opened`](Self::opened).
    pub fn accept_turn(&mut self, response: ModelResponse) -> Arc<Message> {
        self.accept_response(response).0
    }

    /// Appends the results of the pending calls, in call order, and clears them.
    pub(crate) fn accept_tool_results(&mut self, results: Vec<ToolResult>) {
        self.pending = None;
        self.settled.clear();
        self.batch = None;
        for result in results {
            self.messages.push(Arc::new(Message::Tool(result)));
        }
    }

    /// Judges a final answer against the output spec (any text is accepted without one).
    fn judge_final(&mut self, text: &str) -> Verdict {
        let retries = self.rules.output_retries;
        let Some(spec) = self.rules.output.as_ref() else {
            return Verdict::Accept(Value::String(text.to_string()));
        };
        match spec.check(text) {
            Ok(v) => Verdict::Accept(v),
            Err(feedback) if self.output_attempts < retries => {
                self.output_attempts += 1;
                Verdict::Retry(feedback)
            }
            Err(error) => Verdict::Fail {
                attempts: self.output_attempts + 1,
                error,
            },
        }
    }

    /// The text of the last assistant message.
    pub fn last_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::Assistant { .. }))
            .map(|m| m.text().to_string())
            .unwrap_or_default()
    }
}

/// The ids of the tool calls in `messages`.
fn call_ids_in(messages: &History) -> HashSet<String> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| c.id.clone())
        .collect()
}

#[cfg(test)]
mod tests;
