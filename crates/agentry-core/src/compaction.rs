//! Context compaction: how a run keeps its prompt within the model's context window.
//!
//! Before each model call the runtime sizes the prompt (system prompt, messages, tool
//! declarations). When it passes the threshold, the oldest messages are folded into one user
//! message: a summary written by a model call ([`CompactStrategy::Summarize`]) or a short note
//! that they were dropped ([`CompactStrategy::Window`]). Leading system messages and the latest
//! messages stay verbatim, and a tool call is never separated from its results. The `context`
//! hook events (BeforeCompact, AfterCompact, CompactFailed) see and steer each compaction.

use crate::{History, Message, Model, TokenCounter};
use std::fmt;
use std::sync::Arc;

/// The instructions of the summarising call, unless [`Compaction::instructions`] sets others.
pub const DEFAULT_SUMMARY_INSTRUCTIONS: &str = "You compact the history of a conversation \
between a user and an AI assistant that uses tools. Write a concise summary that keeps \
everything needed to continue the work: the user's goal and constraints, decisions taken, \
facts learned from tool results (names, numbers, paths, identifiers verbatim), what is done and \
what remains. Write only the summary.";

/// The first line of the message that replaces compacted messages.
pub const SUMMARY_HEADING: &str =
    "Summary of the earlier conversation (older messages were compacted):";

/// How older messages are compacted (`summarize` or `window` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactStrategy {
    /// A model call summarises them.
    Summarize,
    /// They are dropped, and a note says so.
    Window,
}

impl std::fmt::Display for CompactStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CompactStrategy {
    /// `summarize` or `window`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactStrategy::Summarize => "summarize",
            CompactStrategy::Window => "window",
        }
    }
}

/// What happens when the summarising call fails (after CompactFailed hooks, which may supply a
/// summary instead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnCompactError {
    /// Go on with the history uncompacted (the default).
    #[default]
    Continue,
    /// Fail the run with the error.
    Fail,
}

/// Which messages one compaction folds: `start..end` of the history, with a strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactPlan {
    /// How they are compacted.
    pub strategy: CompactStrategy,
    /// The first message compacted (leading system messages come before it).
    pub start: usize,
    /// One past the last message compacted; messages from here on stay verbatim.
    pub end: usize,
}

impl CompactPlan {
    /// The number of messages it folds.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// True when it folds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The plan moved onto safe boundaries of `messages`: `start` past leading system
    /// messages, `end` within the history and never between a tool call and its results (it
    /// moves back to the assistant turn that made the calls). `None` when fewer than two
    /// messages would be folded.
    pub fn aligned(self, messages: &History) -> Option<CompactPlan> {
        let leading = messages
            .iter()
            .take_while(|m| matches!(m, Message::System { .. }))
            .count();
        let start = self.start.max(leading);
        let mut end = self.end.min(messages.len());
        while end > start && matches!(messages.get(end), Some(Message::Tool(_))) {
            end -= 1;
        }
        (end >= start + 2).then_some(CompactPlan { start, end, ..self })
    }
}

/// When and how a run compacts its history. Set it on an agent with
/// `AgentBuilder::compaction`.
///
/// ```
/// use agentry_core::agent::{Compaction, CompactStrategy};
/// let c = Compaction::summarize(8_000).keep_recent(6);
/// assert_eq!(c.threshold(), 8_000);
/// assert_eq!(c.strategy(), CompactStrategy::Summarize);
/// let w = Compaction::window(4_000);
/// assert_eq!(w.strategy(), CompactStrategy::Window);
/// ```
#[derive(Clone)]
pub struct Compaction {
    threshold: usize,
    keep_recent: usize,
    strategy: CompactStrategy,
    summarizer: Option<Arc<dyn Model>>,
    instructions: Arc<str>,
    on_error: OnCompactError,
    counter: Option<Arc<dyn TokenCounter>>,
}

impl fmt::Debug for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compaction")
            .field("threshold", &self.threshold)
            .field("keep_recent", &self.keep_recent)
            .field("strategy", &self.strategy)
            .field("summarizer", &self.summarizer.as_ref().map(|m| m.name()))
            .field("on_error", &self.on_error)
            .field("counter", &self.counter.as_ref().map(|c| c.name()))
            .finish()
    }
}

impl Compaction {
    /// The number of latest messages kept verbatim unless set otherwise.
    pub const DEFAULT_KEEP_RECENT: usize = 6;

    fn new(threshold: usize, strategy: CompactStrategy) -> Self {
        Compaction {
            threshold,
            keep_recent: Self::DEFAULT_KEEP_RECENT,
            strategy,
            summarizer: None,
            instructions: Arc::from(DEFAULT_SUMMARY_INSTRUCTIONS),
            on_error: OnCompactError::default(),
            counter: None,
        }
    }

    /// Summarise older messages with a model call (the agent's model unless
    /// [`summarizer`](Self::summarizer) names another) once the prompt passes `threshold` tokens.
    pub fn summarize(threshold: usize) -> Self {
        Compaction::new(threshold, CompactStrategy::Summarize)
    }

    /// Drop older messages once the prompt passes `threshold` tokens.
    pub fn window(threshold: usize) -> Self {
        Compaction::new(threshold, CompactStrategy::Window)
    }

    /// Keep the latest `n` messages verbatim (more when that would split a tool call from its
    /// results).
    pub fn keep_recent(mut self, n: usize) -> Self {
        self.keep_recent = n;
        self
    }

    /// Summarise with this model (often a smaller, cheaper one).
    pub fn summarizer(mut self, model: impl Model) -> Self {
        self.summarizer = Some(Arc::new(model));
        self
    }

    /// The system prompt of the summarising call.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Arc::from(text.into());
        self
    }

    /// What a failed summarising call does to the run.
    pub fn on_error(mut self, policy: OnCompactError) -> Self {
        self.on_error = policy;
        self
    }

    /// Count tokens with `counter` instead of the model's own tokenizer (or the estimate).
    pub fn counter(mut self, counter: impl TokenCounter) -> Self {
        self.counter = Some(Arc::new(counter));
        self
    }

    /// The threshold, in tokens.
    pub fn threshold(&self) -> usize {
        self.threshold
    }
    /// Messages kept verbatim.
    pub fn recent(&self) -> usize {
        self.keep_recent
    }
    /// The strategy.
    pub fn strategy(&self) -> CompactStrategy {
        self.strategy
    }
    /// The summarising model, when it is not the agent's.
    pub fn summarizer_model(&self) -> Option<&Arc<dyn Model>> {
        self.summarizer.as_ref()
    }
    /// The summarising call's system prompt.
    pub fn summary_instructions(&self) -> &Arc<str> {
        &self.instructions
    }
    /// The error policy.
    pub fn error_policy(&self) -> OnCompactError {
        self.on_error
    }
    /// The configured counter, if any.
    pub fn token_counter(&self) -> Option<&Arc<dyn TokenCounter>> {
        self.counter.as_ref()
    }

    /// The plan for `messages`: fold everything between the leading system messages and the
    /// latest [`recent`](Self::recent) messages, on safe boundaries. `None` when there is too
    /// little to fold.
    pub fn plan(&self, messages: &History) -> Option<CompactPlan> {
        CompactPlan {
            strategy: self.strategy,
            start: 0,
            end: messages.len().saturating_sub(self.keep_recent),
        }
        .aligned(messages)
    }
}

/// The transcript of `messages` that a summarising call reads: one line per turn, tool calls and
/// results included.
pub fn transcript<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for m in messages {
        match m {
            Message::System { content } => {
                let _ = writeln!(out, "[system] {content}");
            }
            Message::User { content } => {
                let _ = writeln!(out, "[user] {content}");
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.is_empty() {
                    let _ = writeln!(out, "[assistant] {content}");
                }
                for c in tool_calls {
                    let _ = writeln!(out, "[assistant calls {}] {}", c.name, c.arguments);
                }
            }
            Message::Tool(r) => {
                let tag = if r.is_error { "error" } else { "result" };
                let _ = writeln!(out, "[{} {tag}] {}", r.name, r.content);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult};
    use serde_json::json;

    fn history(ms: Vec<Message>) -> History {
        let mut h = History::new();
        for m in ms {
            h.push(m);
        }
        h
    }

    fn call_turn(id: &str) -> Message {
        Message::Assistant {
            content: crate::Content::new(),
            thinking: None,
            tool_calls: vec![ToolCall::new(id, "t", &json!({}))],
        }
    }

    #[test]
    fn the_plan_keeps_leading_system_messages_and_the_latest_turns() {
        let h = history(vec![
            Message::system("rules"),
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
            Message::user("e"),
        ]);
        let plan = Compaction::window(1).keep_recent(2).plan(&h).unwrap();
        assert_eq!((plan.start, plan.end), (1, 4));
    }

    #[test]
    fn the_plan_never_separates_a_call_from_its_results() {
        let h = history(vec![
            Message::user("a"),
            Message::assistant("b"),
            call_turn("1"),
            Message::Tool(ToolResult::ok("1", "t", "x")),
            Message::Tool(ToolResult::ok("1", "t", "y")),
            Message::assistant("done"),
        ]);
        // keep 3 would cut between the call (2) and its results (3, 4): the call stays too.
        let plan = Compaction::window(1).keep_recent(3).plan(&h).unwrap();
        assert_eq!((plan.start, plan.end), (0, 2));
        assert!(matches!(
            h.get(plan.end),
            Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty()
        ));
    }

    #[test]
    fn too_little_to_fold_gives_no_plan() {
        let h = history(vec![Message::user("a"), Message::assistant("b")]);
        assert!(Compaction::window(1).keep_recent(1).plan(&h).is_none());
        assert!(Compaction::window(1).keep_recent(0).plan(&h).is_some());
    }

    #[test]
    fn the_transcript_shows_calls_and_results() {
        let h = history(vec![
            Message::user("weather?"),
            call_turn("1"),
            Message::Tool(ToolResult::ok("1", "t", "sunny")),
        ]);
        let t = transcript(h.iter());
        assert_eq!(
            t,
            "[user] weather?\n[assistant calls t] {}\n[t result] sunny\n"
        );
    }
}
