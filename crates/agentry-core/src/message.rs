//! Messages of a conversation: what the user said, what the model answered, what tools returned.

use crate::content::Content;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// One message of a run's history.
///
/// The history is shared between steps (see [`History`](crate::History)), so a message is
/// written once and never copied by the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// A system instruction placed in the history (the agent's own instructions travel in
    /// [`ModelRequest::system`](crate::ModelRequest::system) instead).
    System {
        /// The instruction text.
        content: String,
    },
    /// A user turn: the run's input, a Stop-hook veto, or feedback asking the model to try again.
    User {
        /// What the user said: text, and images, files or audio.
        content: Content,
    },
    /// A model turn: text, optional reasoning, and the tool calls it asked for.
    Assistant {
        /// The visible answer (may be empty when the turn only calls tools).
        #[serde(default)]
        content: Content,
        /// Reasoning the model streamed, kept so providers that require it get it back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thinking: Option<ThinkingBlock>,
        /// The tool calls of this turn, in the order the model emitted them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A user message: text, or parts (`Message::user([Part::text("Describe this"), image])`).
    pub fn user(content: impl Into<Content>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Message::Assistant {
            content: content.into(),
            thinking: None,
            tool_calls: Vec::new(),
        }
    }

    /// The role of this message.
    pub fn role(&self) -> Role {
        match self {
            Message::System { .. } => Role::System,
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::Tool(_) => Role::Tool,
        }
    }

    /// The text of a system, user or assistant message, or of a tool result: borrowed when the
    /// content is text only; text parts joined by newlines otherwise (media left out: see
    /// [`Message::content`]).
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Message::System { content } => Cow::Borrowed(content),
            Message::User { content } | Message::Assistant { content, .. } => content.text(),
            Message::Tool(r) => r.content.text(),
        }
    }

    /// The parts of a user or assistant message or a tool result (`None` for a system message,
    /// which is text only).
    pub fn content(&self) -> Option<&Content> {
        match self {
            Message::System { .. } => None,
            Message::User { content } | Message::Assistant { content, .. } => Some(content),
            Message::Tool(r) => Some(&r.content),
        }
    }

    /// The parts of a user or assistant message or a tool result, to change them.
    pub fn content_mut(&mut self) -> Option<&mut Content> {
        match self {
            Message::System { .. } => None,
            Message::User { content } | Message::Assistant { content, .. } => Some(content),
            Message::Tool(r) => Some(&mut r.content),
        }
    }

    /// True when the message carries an image, a file or audio.
    pub fn has_media(&self) -> bool {
        self.content().is_some_and(Content::has_media)
    }

    /// The tool calls of an assistant message (empty for every other role).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }

    /// The tool result this message carries, if it is one.
    pub fn tool_result(&self) -> Option<&ToolResult> {
        match self {
            Message::Tool(r) => Some(r),
            _ => None,
        }
    }

    /// The text of the tool result this message carries, if it is one.
    pub fn tool_result_text(&self) -> Option<Cow<'_, str>> {
        self.tool_result().map(|r| r.content.text())
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A system instruction.
    System,
    /// The user (or the runtime speaking for it).
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// A tool call as the model emitted it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the model chose; the result refers to it.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments exactly as the model sent them: JSON text, possibly malformed.
    pub arguments: String,
}

impl ToolCall {
    /// A tool call with JSON arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model sees: text, or parts (a tool may return images and files).
    pub content: Content,
    /// True when the content reports a failure (bad arguments, a blocked call, a tool error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// True when a hook answered the call and the tool never ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mocked: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<Content>,
    ) -> Self {
        ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
            mocked: false,
        }
    }

    /// A result that reports an error to the model.
    pub fn error(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<Content>,
    ) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::ok(call_id, name, content)
        }
    }
}

/// Reasoning a model streamed before its answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The reasoning text.
    pub text: String,
    /// An opaque signature some providers require when the block is sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The provider's own reasoning items, kept verbatim so later turns can send them back as
    /// the provider requires (Anthropic `thinking` and `redacted_thinking` blocks with their
    /// signatures, OpenAI Responses `reasoning` items with encrypted content). Only the provider
    /// that wrote it reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<serde_json::Value>,
}

/// A shared reference to one tool call: a call of a model turn (the message is shared, nothing is
/// copied), or a call given by id and name. Events and tool contexts use it to name the call
/// without cloning its strings.
#[derive(Clone, Debug)]
pub struct ToolCallRef(CallRepr);

#[derive(Clone, Debug)]
enum CallRepr {
    Turn(Arc<Message>, usize),
    Named { id: Arc<str>, name: Arc<str> },
}

impl ToolCallRef {
    /// Call `index` of a model turn.
    ///
    /// # Panics
    /// If the message has no tool call at `index`.
    pub fn in_turn(turn: Arc<Message>, index: usize) -> Self {
        assert!(
            index < turn.tool_calls().len(),
            "the turn has no tool call {index}"
        );
        ToolCallRef(CallRepr::Turn(turn, index))
    }

    /// A call given by id and tool name.
    pub fn named(id: impl Into<Arc<str>>, name: impl Into<Arc<str>>) -> Self {
        ToolCallRef(CallRepr::Named {
            id: id.into(),
            name: name.into(),
        })
    }

    /// The call id.
    pub fn id(&self) -> &str {
        match &self.0 {
            CallRepr::Turn(turn, i) => &turn.tool_calls()[*i].id,
            CallRepr::Named { id, .. } => id,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        match &self.0 {
            CallRepr::Turn(turn, i) => &turn.tool_calls()[*i].name,
            CallRepr::Named { name, .. } => name,
        }
    }
}
