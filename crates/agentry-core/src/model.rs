//! The `Model` trait: a request in, a stream of events out.

use crate::{FinishReason, History, ThinkingBlock, ToolCall, ToolSpec, Usage};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Sampling and length parameters of a model call.
///
/// Cloning parameters with no `stop` sequences and no `extra` fields does not allocate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// The most tokens the model may produce in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sequences that end the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Provider-specific fields passed through unchanged.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// What the engine asks a model for: one turn of the conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// The system prompt (the agent's instructions).
    pub system: Option<Arc<str>>,
    /// The conversation so far (shared, O(1) to clone).
    pub messages: History,
    /// The tools the model may call.
    pub tools: Arc<[ToolSpec]>,
    /// Sampling and length parameters.
    pub params: ModelParams,
    /// The JSON Schema the final answer must match, when the agent has a structured output type.
    pub output_schema: Option<Arc<serde_json::Value>>,
}

impl ModelRequest {
    /// The parts of this request that differ from `before`, in this order: `system`,
    /// `messages` (by identity: the history is shared, so untouched messages are the same
    /// ones), `tools` (by name), `params`.
    ///
    /// ```
    /// use agentry_core::{History, Message, ModelRequest};
    /// let mut history = History::new();
    /// history.push(Message::user("hi"));
    /// let asked = ModelRequest::new(history);
    /// let mut sent = asked.clone();
    /// assert!(sent.changed_from(&asked).is_empty());
    /// sent.system = Some("Be brief.".into());
    /// sent.params.max_tokens = Some(100);
    /// sent.messages.push(Message::user("a hint"));
    /// assert_eq!(sent.changed_from(&asked), ["system", "messages", "params"]);
    /// // The same text in another message is another message.
    /// let mut retold = History::new();
    /// retold.push(Message::user("hi"));
    /// assert_eq!(ModelRequest::new(retold).changed_from(&asked), ["messages"]);
    /// ```
    pub fn changed_from(&self, before: &ModelRequest) -> Vec<&'static str> {
        let same_system = match (&self.system, &before.system) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (a, b) => a.is_none() && b.is_none(),
        };
        let same_tools = Arc::ptr_eq(&self.tools, &before.tools)
            || (self.tools.len() == before.tools.len()
                && self
                    .tools
                    .iter()
                    .zip(before.tools.iter())
                    .all(|(a, b)| a.name == b.name));
        [
            ("system", same_system),
            ("messages", self.messages.same_messages(&before.messages)),
            ("tools", same_tools),
            ("params", self.params == before.params),
        ]
        .into_iter()
        .filter(|(_, same)| !same)
        .map(|(part, _)| part)
        .collect()
    }

    /// A request with only messages.
    pub fn new(messages: History) -> Self {
        ModelRequest {
            system: None,
            messages,
            tools: Arc::from(Vec::new()),
            params: ModelParams::default(),
            output_schema: None,
        }
    }
}

/// One item of a streamed model response.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    /// A piece of visible text.
    TextDelta(String),
    /// A piece of reasoning text.
    ThinkingDelta(String),
    /// The signature that closes a reasoning block.
    ThinkingSignature(String),
    /// The provider's reasoning items of this turn, to be sent back verbatim in later turns
    /// (stored in [`ThinkingBlock::replay`]).
    ThinkingReplay(serde_json::Value),
    /// A complete tool call (providers assemble argument deltas before emitting it).
    ToolCall(ToolCall),
    /// Token usage of the turn (may arrive more than once; the last one wins).
    Usage(Usage),
    /// Why the turn ended.
    Finish(FinishReason),
    /// How far the turn is before its text arrives: a model that runs here reads a long prompt
    /// for a while before its first token, and holds back text that may be a tool call. Says
    /// the model is alive (it resets the turn's idle deadline); no hook sees it.
    Progress(TurnProgress),
}

/// How far a model's turn is, in tokens ([`ModelEvent::Progress`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnProgress {
    /// Prompt tokens read so far.
    pub prompt_read: u32,
    /// Prompt tokens to read in all (those a cache already held are not counted).
    pub prompt_tokens: u32,
    /// Tokens generated so far.
    pub generated: u32,
}

/// The stream a [`Model`] returns.
pub type ModelStream<'a> = BoxStream<'a, Result<ModelEvent, ModelError>>;

/// A language model: turns a request into a stream of events.
///
/// Implement this for a new provider; `agentry-models` has the scripted model for tests and real
/// HTTP clients. The engine consumes the stream, fires TextDelta and Thinking hooks on the way, and
/// assembles a [`ModelResponse`].
pub trait Model: Send + Sync + 'static {
    /// A short identifier, such as `openai:gpt-4.1` or `scripted`.
    fn name(&self) -> &str;

    /// Starts one turn.
    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a>;

    /// The model's own token counter, when it knows its tokenizer (used to size prompts, e.g.
    /// for context compaction). `None`, the default, means an estimate is used.
    fn token_counter(&self) -> Option<Arc<dyn crate::TokenCounter>> {
        None
    }
}

/// A shared model is a model: one client can serve many agents.
impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        (**self).stream(request)
    }

    fn token_counter(&self) -> Option<Arc<dyn crate::TokenCounter>> {
        (**self).token_counter()
    }
}

/// A complete model turn, assembled from the stream (or given by a hook instead of the model).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelResponse {
    /// The visible text.
    pub text: String,
    /// The reasoning, if the model streamed any.
    pub thinking: Option<ThinkingBlock>,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used by this turn.
    pub usage: Usage,
    /// Why the turn ended.
    pub finish_reason: FinishReason,
}

impl ModelResponse {
    /// Calls `model` once and assembles its whole response, without hooks (for calls a run makes
    /// on its own behalf, such as summarising for compaction).
    pub async fn complete(model: &dyn Model, request: &ModelRequest) -> Result<Self, ModelError> {
        use futures::StreamExt;
        let mut stream = model.stream(request);
        let mut response = ModelResponse::default();
        while let Some(event) = stream.next().await {
            match event? {
                ModelEvent::TextDelta(text) => response.text.push_str(&text),
                ModelEvent::ToolCall(call) => response.tool_calls.push(call),
                ModelEvent::Usage(usage) => response.usage = usage,
                ModelEvent::Finish(reason) => response.finish_reason = reason,
                ModelEvent::ThinkingDelta(_)
                | ModelEvent::ThinkingSignature(_)
                | ModelEvent::ThinkingReplay(_)
                | ModelEvent::Progress(_) => {}
            }
        }
        Ok(response)
    }

    /// A response with text only.
    pub fn text(text: impl Into<String>) -> Self {
        ModelResponse {
            text: text.into(),
            ..ModelResponse::default()
        }
    }

    /// A response that calls tools.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        ModelResponse {
            tool_calls: calls,
            finish_reason: FinishReason::ToolCalls,
            ..ModelResponse::default()
        }
    }
}

/// What went wrong when calling a model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model `{model}` failed ({kind:?}): {message}")]
pub struct ModelError {
    /// The model that failed.
    pub model: String,
    /// The class of failure, which decides whether a retry can help.
    pub kind: ModelErrorKind,
    /// What happened and what to do about it.
    pub message: String,
}

impl ModelError {
    /// A new error.
    pub fn new(model: impl Into<String>, kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            model: model.into(),
            kind,
            message: message.into(),
        }
    }
}

/// Classes of model failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The provider is rate-limiting; retry later.
    RateLimited,
    /// The provider failed (5xx); retry may help.
    Server,
    /// The request timed out.
    Timeout,
    /// The stream broke or carried something unreadable.
    Stream,
    /// The request was rejected (bad parameters, unknown model).
    InvalidRequest,
    /// The conversation does not fit the model's context window; compacting it may help.
    ContextTooLong,
    /// The credentials were rejected.
    Auth,
    /// Anything else, including scripted errors.
    Other,
}
