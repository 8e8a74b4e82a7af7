//! The step machine: the pure, serializable part of a run that decides what happens next.
//!
//! It holds the history, step count, usage and pending tool calls, and answers questions such as
//! "may another step start?", "did this response call tools or answer?", "is this final answer
//! acceptable?". It never calls a model, a tool or a hook: runtimes do, and feed it the results.
//! That is what lets the in-process runtime and a durable one drive the same runs.

use crate::agent::OutputSpec;
use crate::{History, Message, ModelResponse, StopReason, ToolCall, ToolResult, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// The format version of [`RunSnapshot`].
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a run needs to continue, serializable: what a checkpoint stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSnapshot {
    /// The format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// The run id.
    pub run_id: String,
    /// The parent run, for sub-agent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The agent's name.
    pub agent: String,
    /// The session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// The history.
    pub messages: History,
    /// The state, as JSON.
    pub state: Value,
    /// Steps completed.
    pub step: u32,
    /// Tokens used, by every model call (responses hooks rejected included).
    pub usage: Usage,
    /// The part of `usage` spent on responses that AfterModel hooks rejected (asked to retry).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub retried_usage: Usage,
    /// Model turns accepted.
    pub model_calls: u32,
    /// Invalid final answers sent back so far.
    pub output_attempts: u32,
    /// Tool calls the model asked for whose results are not in the history yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tool_calls: Vec<ToolCall>,
    /// Results of pending calls that already settled (the others wait for approval, or were in
    /// flight when the run stopped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled_results: Vec<ToolResult>,
    /// What BeforeToolBatch hooks decided for the pending calls, when they ran on them: a
    /// resumed turn follows it (they run once per turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_batch: Option<crate::hooks::BatchPlan>,
    /// Set once the run has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// The output, once the run has ended with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Set when the run failed after this checkpoint: the error. The run can be resumed from
    /// here (once what failed is fixed); resuming clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's hooks and tool sources that are data (see
    /// [`StoredHook`](crate::hooks::StoredHook), [`StoredToolSource`](crate::StoredToolSource)),
    /// built again when it resumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::hooks::HookSpecRecord>,
}

impl RunSnapshot {
    /// The snapshot of run `run_id` of `agent` before anything happened in it: no history, no
    /// state, no step. (What an engine that drives runs itself opens a new run's effects with.)
    pub fn new(run_id: impl Into<String>, agent: impl Into<String>) -> Self {
        RunSnapshot {
            version: SNAPSHOT_VERSION,
            run_id: run_id.into(),
            parent_run_id: None,
            agent: agent.into(),
            session_id: None,
            user_id: None,
            tags: Vec::new(),
            metadata: Default::default(),
            messages: History::new(),
            state: Value::Null,
            step: 0,
            usage: Usage::default(),
            retried_usage: Usage::default(),
            model_calls: 0,
            output_attempts: 0,
            pending_tool_calls: Vec::new(),
            settled_results: Vec::new(),
            pending_batch: None,
            stop: None,
            output: None,
            error: None,
            hooks: Vec::new(),
        }
    }
}

/// Whether a step may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepStart {
    /// Step `n` (1-based) starts.
    Begin(u32),
    /// The step limit is reached.
    Limit(u32),
}

/// What a model turn asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// Run the tool calls of the turn (see [`RunMachine::pending_calls`]).
    Tools,
    /// A final answer.
    Final,
}

/// Whether a final answer is acceptable.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
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
            retried_usage: s.retried_usage,
            model_calls: s.model_calls,
            output_attempts: s.output_attempts,
            pending: (!s.pending_tool_calls.is_empty()).then(|| {
                Arc::new(Message::Assistant {
                    content: String::new(),
                    thinking: None,
                    tool_calls: s.pending_tool_calls.clone(),
                })
            }),
            settled: s.settled_results.clone(),
            batch: s.pending_batch.clone(),
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
    /// history stays well-formed. Returns the messages added (none without a pending turn).
    pub fn cut_short(&mut self, stop: &StopReason) -> Vec<Arc<Message>> {
        if self.pending.is_none() {
            return Vec::new();
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

    /// Starts a step, unless `max_steps` are done.
    pub fn begin_step(&mut self, max_steps: u32) -> StepStart {
        if self.step >= max_steps {
            return StepStart::Limit(max_steps);
        }
        self.step += 1;
        StepStart::Begin(self.step)
    }

    /// Takes back the step under way: it does not count, and the next step started gets its
    /// number again. For a step a BeforeStep hook stopped before it did anything, and for the
    /// step a cancellation cut off (the run's last checkpoint is the end of the step before).
    pub fn abandon_step(&mut self) {
        self.step = self.step.saturating_sub(1);
    }

    /// Appends a user message.
    pub fn add_user(&mut self, text: impl Into<String>) -> Arc<Message> {
        self.push(Message::user(text))
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) -> Arc<Message> {
        let m = Arc::new(message);
        self.messages.push(m.clone());
        m
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
    pub fn accept_response(&mut self, mut response: ModelResponse) -> (Arc<Message>, Turn) {
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
            content: response.text,
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

    /// Appends the results of the pending calls, in call order, and clears them.
    pub fn accept_tool_results(&mut self, results: Vec<ToolResult>) -> Vec<Arc<Message>> {
        self.pending = None;
        self.settled.clear();
        self.batch = None;
        results
            .into_iter()
            .map(|r| self.push(Message::Tool(r)))
            .collect()
    }

    /// Judges a final answer against the output spec (any text is accepted without one).
    pub fn judge_final(
        &mut self,
        text: &str,
        output: Option<&OutputSpec>,
        retries: u32,
    ) -> Verdict {
        let Some(spec) = output else {
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
mod tests {
    use super::*;

    #[test]
    fn step_limit_is_exact() {
        let mut m = RunMachine::new();
        assert_eq!(m.begin_step(2), StepStart::Begin(1));
        assert_eq!(m.begin_step(2), StepStart::Begin(2));
        assert_eq!(m.begin_step(2), StepStart::Limit(2));
    }

    #[test]
    fn an_abandoned_step_is_started_again_with_its_number() {
        let mut m = RunMachine::new();
        assert_eq!(m.begin_step(5), StepStart::Begin(1));
        m.abandon_step();
        assert_eq!(m.step, 0);
        assert_eq!(m.begin_step(5), StepStart::Begin(1));
        assert_eq!(m.begin_step(5), StepStart::Begin(2));
        m.abandon_step();
        assert_eq!(m.begin_step(5), StepStart::Begin(2));
        // Nothing to take back before the first step.
        let mut fresh = RunMachine::new();
        fresh.abandon_step();
        assert_eq!(fresh.begin_step(5), StepStart::Begin(1));
    }

    #[test]
    fn tool_turn_sets_pending_until_results_arrive() {
        let mut m = RunMachine::new();
        let call = ToolCall::new("c1", "echo", &serde_json::json!({"text": "x"}));
        let (_, turn) = m.accept_response(ModelResponse::tool_calls(vec![call.clone()]));
        assert_eq!(turn, Turn::Tools);
        assert_eq!(m.pending_calls(), [call]);
        m.accept_tool_results(vec![ToolResult::ok("c1", "echo", "x")]);
        assert!(m.pending_calls().is_empty());
        assert_eq!(m.messages.len(), 2);
    }

    #[test]
    fn call_ids_are_unique_in_a_run_and_kept_when_they_are() {
        let mut m = RunMachine::new();
        let call = |id: &str| ToolCall::new(id, "echo", &serde_json::json!({}));
        let ids = |m: &Arc<Message>| {
            m.tool_calls()
                .iter()
                .map(|c| c.id.clone())
                .collect::<Vec<_>>()
        };
        // A provider's own ids are kept; an empty one and a repeat within the turn are not.
        let (t1, _) = m.accept_response(ModelResponse::tool_calls(vec![
            call("toolu_1"),
            call(""),
            call("toolu_1"),
        ]));
        assert_eq!(ids(&t1), ["toolu_1", "call_1_1", "call_1_2"]);
        m.accept_tool_results(Vec::new());
        // A provider that numbers calls per turn repeats `call_0`: the repeat gets its own.
        let (t2, _) = m.accept_response(ModelResponse::tool_calls(vec![call("call_0")]));
        let (t3, _) = m.accept_response(ModelResponse::tool_calls(vec![call("call_0")]));
        assert_eq!(
            (ids(&t2), ids(&t3)),
            (vec!["call_0".into()], vec!["call_3_0".into()])
        );
        // A restored machine knows the ids of its history.
        let snapshot_messages = m.messages.clone();
        let mut restored = RunMachine::new();
        restored.set_history(snapshot_messages);
        restored.model_calls = m.model_calls;
        let (t4, _) = restored.accept_response(ModelResponse::tool_calls(vec![call("toolu_1")]));
        assert_eq!(ids(&t4), ["call_4_0"]);
    }

    #[test]
    fn output_retries_are_bounded() {
        let spec = OutputSpec::new(serde_json::json!({"type": "integer"})).unwrap();
        let mut m = RunMachine::new();
        assert!(matches!(
            m.judge_final("x", Some(&spec), 1),
            Verdict::Retry(_)
        ));
        assert!(matches!(
            m.judge_final("y", Some(&spec), 1),
            Verdict::Fail { attempts: 2, .. }
        ));
        assert_eq!(
            m.judge_final("7", Some(&spec), 1),
            Verdict::Accept(serde_json::json!(7))
        );
    }
}
