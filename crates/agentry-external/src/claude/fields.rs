//! The fields a Claude Code event takes from the agentry event it maps: the event's own JSON
//! form (its `Serialize`, the form command hooks get under agentry's names), with the fields
//! Claude Code's hooks read kept under Claude Code's names, and each tool under its Claude Code
//! name with Claude Code's input fields. Nothing here builds a field by hand.

use crate::hooks::Engine;
use serde::Serialize;
use serde_json::{Map, Value};

/// The fields of one Claude Code event: each as (agentry's name, Claude Code's name). Fields of
/// the agentry event not listed are not part of the Claude Code event.
pub(super) struct Renames(&'static [(&'static str, &'static str)]);

/// A call's tool, input and id: PreToolUse, and PermissionRequest (without the id).
pub(super) const TOOL_CALL: Renames = Renames(&[
    ("tool_name", "tool_name"),
    ("tool_input", "tool_input"),
    ("tool_use_id", "tool_use_id"),
]);

/// PostToolUse: the call and its result as `tool_response`.
pub(super) const TOOL_RESULT: Renames = Renames(&[
    ("tool_name", "tool_name"),
    ("tool_input", "tool_input"),
    ("tool_use_id", "tool_use_id"),
    ("content", "tool_response"),
]);

/// PostToolUseFailure: the call and its error.
pub(super) const TOOL_FAILURE: Renames = Renames(&[
    ("tool_name", "tool_name"),
    ("tool_input", "tool_input"),
    ("tool_use_id", "tool_use_id"),
    ("error", "error"),
]);

/// PostToolBatch: the results of one turn's calls as `tool_calls`.
pub(super) const TOOL_BATCH: Renames = Renames(&[("tool_results", "tool_calls")]);

/// PermissionRequest: the call waiting for approval.
pub(super) const APPROVAL: Renames =
    Renames(&[("tool_name", "tool_name"), ("tool_input", "tool_input")]);

/// UserPromptSubmit: the run's input as the prompt.
pub(super) const PROMPT: Renames = Renames(&[("input", "prompt")]);

/// SubagentStart: the sub-agent's call as its id, its name as its type.
pub(super) const SUB_AGENT: Renames =
    Renames(&[("tool_use_id", "agent_id"), ("agent", "agent_type")]);

/// Stop and SubagentStop: the run's final answer as the last assistant message.
pub(super) const STOP: Renames = Renames(&[("output", "last_assistant_message")]);

/// PostCompact: the summary.
pub(super) const COMPACTED: Renames = Renames(&[("summary", "compact_summary")]);

/// A tool's result as `tool_response`: its JSON when it is JSON, else its text.
fn response(content: Value) -> Value {
    match &content {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => content,
        },
        _ => content,
    }
}

impl Engine {
    /// The fields `ev` gives the Claude Code event `renames` describes.
    pub(super) fn claude_fields(
        &self,
        ev: &impl Serialize,
        renames: &Renames,
    ) -> Map<String, Value> {
        let mut form = match serde_json::to_value(ev) {
            Ok(Value::Object(form)) => form,
            // Every hook event serializes to an object; an event that did not would give none
            // of its fields rather than fields guessed at.
            _ => Map::new(),
        };
        let mut fields = Map::new();
        for (agentry, claude) in renames.0 {
            if let Some(value) = form.remove(*agentry) {
                fields.insert((*claude).to_string(), value);
            }
        }
        self.claude_tool(&mut fields);
        // Claude Code's prompt is text: an input with images or files gives its text as
        // `prompt`, and its media parts (by reference) as `attachments`.
        if let Some(Value::Array(parts)) = fields
            .get_mut("prompt")
            .filter(|p| p.is_array())
            .map(Value::take)
        {
            let (texts, media): (Vec<Value>, Vec<Value>) =
                parts.into_iter().partition(|p| p["type"] == "text");
            let text: Vec<&str> = texts.iter().filter_map(|p| p["text"].as_str()).collect();
            fields.insert("prompt".into(), text.join("\n").into());
            fields.insert("attachments".into(), Value::Array(media));
        }
        if let Some(content) = fields.remove("tool_response") {
            fields.insert("tool_response".into(), response(content));
        }
        if let Some(Value::Array(calls)) = fields.get_mut("tool_calls") {
            for call in calls.iter_mut().filter_map(Value::as_object_mut) {
                self.claude_tool(call);
            }
        }
        fields
    }

    /// The tool `fields` name, under its Claude Code name, with its input's fields renamed as
    /// Claude Code's tools name them.
    fn claude_tool(&self, fields: &mut Map<String, Value>) {
        let Some(Value::String(tool)) = fields.get("tool_name") else {
            return;
        };
        let names = &self.claude.tool_names;
        let tool = tool.clone();
        if let Some(input) = fields.get_mut("tool_input") {
            let claude = names
                .claude_input(&tool, input, &self.project_dir)
                .into_owned();
            *input = claude;
        }
        let name = names.claude_name(&tool).to_string();
        fields.insert("tool_name".into(), Value::String(name));
    }
}
