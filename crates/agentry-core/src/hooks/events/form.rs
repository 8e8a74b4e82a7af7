//! The pieces of the events' JSON form a field cannot say by itself: a value as its message, a
//! history as its length, a call as the names hook scripts know, a model request or response as
//! its parts, a batch as its calls or results. The events name them with `serialize_with`.

use crate::{
    FinishReason, History, Message, ModelParams, ModelRequest, ModelResponse, PendingApproval,
    ToolCall, ToolCallRef, ToolResult, ToolSpec, Usage,
};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::fmt::Display;
use std::sync::Arc;

/// A value as its message (an error's `Display`).
pub(super) fn message<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// A history as the number of its messages.
pub(super) fn count<S: Serializer>(messages: &History, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(messages.len() as u64)
}

/// A call, as the fields hook scripts know it by.
#[derive(Serialize)]
struct Call<'a> {
    tool_name: &'a str,
    tool_use_id: &'a str,
}

/// A call as `tool_name` and `tool_use_id` (flattened into its event).
pub(super) fn call<S: Serializer>(call: &ToolCallRef, s: S) -> Result<S::Ok, S::Error> {
    Call {
        tool_name: call.name(),
        tool_use_id: call.id(),
    }
    .serialize(s)
}

/// A pending call, as the fields hook scripts know it by.
#[derive(Serialize)]
struct Pending<'a> {
    tool_name: &'a str,
    tool_input: &'a Value,
    tool_use_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

/// A pending call as `tool_name`, `tool_input`, `tool_use_id` and `reason` (flattened into its
/// event).
pub(super) fn pending<S: Serializer>(p: &PendingApproval, s: S) -> Result<S::Ok, S::Error> {
    Pending {
        tool_name: &p.tool,
        tool_input: &p.input,
        tool_use_id: &p.call_id,
        reason: Some(&p.reason),
    }
    .serialize(s)
}

/// A pending call as `tool_name`, `tool_input` and `tool_use_id`, without the reason it waited
/// for (flattened into its event).
pub(super) fn decided_call<S: Serializer>(p: &PendingApproval, s: S) -> Result<S::Ok, S::Error> {
    Pending {
        tool_name: &p.tool,
        tool_input: &p.input,
        tool_use_id: &p.call_id,
        reason: None,
    }
    .serialize(s)
}

/// The tools of a request, by name.
struct ToolNames<'a>(&'a [ToolSpec]);

impl Serialize for ToolNames<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| &t.name))
    }
}

/// A model request, as hooks see it.
#[derive(Serialize)]
struct Request<'a> {
    system: Option<&'a str>,
    messages: &'a History,
    tools: ToolNames<'a>,
    params: &'a ModelParams,
}

/// A model request as `system`, `messages`, `tools` (their names) and `params` (flattened into
/// its event; the output schema is not part of it).
pub(super) fn request<S: Serializer>(r: &ModelRequest, s: S) -> Result<S::Ok, S::Error> {
    Request {
        system: r.system.as_deref(),
        messages: &r.messages,
        tools: ToolNames(&r.tools),
        params: &r.params,
    }
    .serialize(s)
}

/// A model response, as hooks see it.
#[derive(Serialize)]
struct Response<'a> {
    text: &'a str,
    tool_calls: &'a [ToolCall],
    usage: Usage,
    finish_reason: &'a FinishReason,
}

/// A model response as `text`, `tool_calls`, `usage` and `finish_reason` (flattened into its
/// event; the reasoning is not part of it).
pub(super) fn response<S: Serializer>(r: &ModelResponse, s: S) -> Result<S::Ok, S::Error> {
    Response {
        text: &r.text,
        tool_calls: &r.tool_calls,
        usage: r.usage,
        finish_reason: &r.finish_reason,
    }
    .serialize(s)
}

/// One call of a batch, as hooks see it.
#[derive(Serialize)]
struct BatchCall<'a> {
    tool_name: &'a str,
    tool_input: Value,
    tool_use_id: &'a str,
}

/// The calls of a model turn as `[{tool_name, tool_input, tool_use_id}]`: each input parsed from
/// its arguments, or their text when they are not JSON.
pub(super) fn batch_calls<S: Serializer>(turn: &Arc<Message>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(turn.tool_calls().iter().map(|c| {
        BatchCall {
            tool_name: &c.name,
            tool_input: serde_json::from_str(&c.arguments)
                .unwrap_or_else(|_| Value::String(c.arguments.clone())),
            tool_use_id: &c.id,
        }
    }))
}

/// One result of a batch, as hooks see it.
#[derive(Serialize)]
struct BatchResult<'a> {
    tool_use_id: &'a str,
    tool_name: &'a str,
    tool_response: &'a crate::Content,
    is_error: bool,
}

/// The results of a model turn's calls as `[{tool_use_id, tool_name, tool_response,
/// is_error}]`.
pub(super) fn batch_results<S: Serializer>(
    results: &[ToolResult],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(results.iter().map(|r| BatchResult {
        tool_use_id: &r.call_id,
        tool_name: &r.name,
        tool_response: &r.content,
        is_error: r.is_error,
    }))
}
