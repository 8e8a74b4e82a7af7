//! Every agentry event under its own name: its typed payload as JSON fields, and what a
//! command's answer does to it.
//!
//! The answer is the same JSON as for Claude Code's events: `decision: "block"` with a `reason`
//! takes the event's own decision where it has one (BeforeStep and AfterStep stop the run, Stop
//! vetoes a natural stop, AfterModel retries with the reason as feedback, TextDelta and Thinking
//! abort the stream, BeforeTool and BeforeSubAgent block, BeforeCompact vetoes, ApprovalRequested
//! rejects); `hookSpecificOutput.updatedInput` rewrites RunStart's, BeforeTool's and
//! BeforeSubAgent's input; `hookSpecificOutput.additionalContext` is added to RunStart's input,
//! AfterTool's content, ToolFailed's error and BeforeSubAgent's input;
//! `hookSpecificOutput.updatedToolOutput` replaces AfterTool's content; `continue: false` stops
//! the run.

use crate::claude::EventName;
use crate::command::Merged;
use crate::hooks::Engine;
use agentry_core::hooks::*;
use serde_json::{Map, Value, json};

/// An agentry event a command can handle under its own name.
pub(crate) trait Native: Event {
    /// What a matcher is tested against (a tool name, an agent name), if anything.
    fn target(&self) -> Option<&str> {
        None
    }
    /// The event's fields.
    fn fields(&self, m: &mut Map<String, Value>);
    /// Applies what the commands decided.
    fn apply(&mut self, merged: Merged) {
        let _ = merged;
    }
}

fn put(m: &mut Map<String, Value>, key: &str, value: impl serde::Serialize) {
    m.insert(key.into(), json!(value));
}

impl Engine {
    /// Fires the handlers registered under the agentry event's own name, and applies what they
    /// decided.
    pub(crate) async fn native<E: Native>(&self, mut ev: E, ctx: &HookCtx) -> HookResult<E> {
        let event = EventName::Agentry(E::KIND);
        if !self.has(event) {
            return Ok(ev);
        }
        let site = self.claude.site(ctx);
        let target = ev.target().map(str::to_string);
        let merged = self
            .fire(event, target.as_deref(), &site, |m| ev.fields(m))
            .await?;
        ev.apply(merged);
        Ok(ev)
    }
}

/// `text` with the context the commands of `kind` gave after it.
fn with_context(text: &str, merged: &Merged, kind: EventKind) -> Option<String> {
    let reminder = merged.reminder(EventName::Agentry(kind))?;
    Some(if text.is_empty() {
        reminder
    } else {
        format!("{text}\n\n{reminder}")
    })
}

fn input_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Native for RunStart {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "input", &self.input);
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(input) = &merged.updated_input {
            self.input = input_text(input);
        }
        if let Some(text) = with_context(&self.input, &merged, Self::KIND) {
            self.input = text;
        }
    }
}

impl Native for RunEnd {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "stop", self.stop());
        put(m, "output", self.output());
        put(m, "usage", self.usage());
        put(m, "steps", self.steps());
    }
}

impl Native for RunFailed {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "error", self.error().to_string());
    }
}

impl Native for BeforeStep {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "step", self.step());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.stop(reason);
        }
    }
}

impl Native for AfterStep {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "step", self.step());
        put(m, "usage", self.usage());
        put(m, "model_calls", self.model_calls());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.stop(reason);
        }
    }
}

impl Native for Stop {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "reason", self.reason());
        put(m, "step", self.step());
        put(m, "output", self.output());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block
            && self.reason().is_natural()
        {
            self.veto(reason);
        }
    }
}

impl Native for BeforeModel {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "system", self.request.system.as_deref());
        put(m, "messages", &self.request.messages);
        let tools: Vec<&str> = self.request.tools.iter().map(|t| t.name.as_str()).collect();
        put(m, "tools", tools);
        put(m, "params", &self.request.params);
    }
}

impl Native for AfterModel {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "model", self.model());
        put(m, "text", &self.response.text);
        put(m, "tool_calls", &self.response.tool_calls);
        put(m, "usage", self.response.usage);
        put(m, "finish_reason", &self.response.finish_reason);
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.retry(reason);
        }
    }
}

/// The streamed-text events: their text, and a block aborts the stream.
macro_rules! streamed_text {
    ($($ty:ident),*) => {$(
        impl Native for $ty {
            fn fields(&self, m: &mut Map<String, Value>) {
                put(m, "text", &self.text);
            }
            fn apply(&mut self, merged: Merged) {
                if let Some(reason) = merged.block {
                    self.abort(reason);
                }
            }
        }
    )*};
}
streamed_text!(TextDelta, Thinking);

/// A pending call's fields, as the approval events give them.
fn pending_fields(m: &mut Map<String, Value>, p: &agentry_core::PendingApproval) {
    put(m, "tool_name", &p.tool);
    put(m, "tool_input", &p.input);
    put(m, "tool_use_id", &p.call_id);
}

impl Native for BeforeTool {
    fn target(&self) -> Option<&str> {
        Some(self.name())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tool_name", self.name());
        put(m, "tool_input", &self.input);
        put(m, "tool_use_id", self.call_id());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.block(reason);
        } else if let Some(input) = merged.updated_input {
            self.input = input;
        }
    }
}

impl Native for AfterTool {
    fn target(&self) -> Option<&str> {
        Some(self.name())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tool_name", self.name());
        put(m, "tool_input", self.input());
        put(m, "tool_use_id", self.call_id());
        put(m, "content", &self.content);
        put(m, "is_error", self.is_error);
        put(m, "mocked", self.mocked());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(output) = &merged.updated_output {
            self.content = input_text(output);
        }
        if let Some(text) = with_context(&self.content, &merged, Self::KIND) {
            self.content = text;
        }
    }
}

impl Native for ToolFailed {
    fn target(&self) -> Option<&str> {
        Some(self.name())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tool_name", self.name());
        put(m, "tool_input", self.input());
        put(m, "tool_use_id", self.call_id());
        put(m, "error", self.error());
    }
    fn apply(&mut self, merged: Merged) {
        let error = self.rewritten_error().unwrap_or(self.error()).to_string();
        if let Some(text) = with_context(&error, &merged, Self::KIND) {
            self.rewrite_error(text);
        }
    }
}

impl Native for BeforeSubAgent {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "agent", self.agent());
        put(m, "tool_use_id", self.call_id());
        put(m, "input", &self.input);
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.block(reason);
            return;
        }
        if let Some(input) = &merged.updated_input {
            self.input = input_text(input);
        }
        if let Some(text) = with_context(&self.input, &merged, Self::KIND) {
            self.input = text;
        }
    }
}

impl Native for AfterSubAgent {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "agent", self.agent());
        put(m, "child_run_id", self.run_id());
        put(m, "input", self.input());
        put(m, "output", &self.output);
    }
}

impl Native for SubAgentFailed {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "agent", self.agent());
        put(m, "input", self.input());
        put(m, "error", self.error());
    }
}

impl Native for ApprovalRequested {
    fn target(&self) -> Option<&str> {
        Some(&self.pending().tool)
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        pending_fields(m, self.pending());
        put(m, "reason", &self.pending().reason);
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.reject(reason);
        }
    }
}

impl Native for ApprovalResolved {
    fn target(&self) -> Option<&str> {
        Some(&self.pending().tool)
    }
    fn fields(&self, m: &mut Map<String, Value>) {
        pending_fields(m, self.pending());
        put(m, "decision", self.decision());
        put(m, "by", resolver(self.by()));
    }
}

fn resolver(by: &Resolver) -> Value {
    match by {
        Resolver::Person => json!("person"),
        Resolver::Hook(name) => json!({ "hook": name }),
    }
}

impl Native for StoppedByHuman {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tool_use_id", self.call_id());
        put(m, "reason", self.reason());
        put(m, "by", resolver(self.by()));
    }
}

impl Native for BeforeCompact {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tokens", self.tokens());
        put(m, "threshold", self.threshold());
        put(m, "messages", self.messages().len());
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.veto(reason);
        }
    }
}

impl Native for AfterCompact {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tokens_before", self.tokens_before());
        put(m, "summary", &self.summary);
    }
}

impl Native for CompactFailed {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "error", self.error().to_string());
    }
}

impl Native for StateChange {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "previous", self.previous());
        put(m, "current", self.current());
        put(m, "source", self.source());
    }
}

impl Native for MessageAdded {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "message", &**self.message());
    }
}

impl Native for Custom {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "name", self.name());
        put(m, "data", self.data());
    }
}

impl Native for BeforeToolBatch {
    fn fields(&self, m: &mut Map<String, Value>) {
        let calls: Vec<Value> = self
            .calls()
            .iter()
            .map(|c| {
                json!({
                    "tool_name": c.name,
                    "tool_input": serde_json::from_str::<Value>(&c.arguments)
                        .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                    "tool_use_id": c.id,
                })
            })
            .collect();
        put(m, "tool_calls", calls);
    }
    /// A block blocks every call of the batch, with the reason.
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            let ids: Vec<String> = self.calls().iter().map(|c| c.id.clone()).collect();
            for id in ids {
                self.block(&id, reason.clone());
            }
        }
    }
}

impl Native for AfterToolBatch {
    fn fields(&self, m: &mut Map<String, Value>) {
        put(m, "tool_results", batch_results(self));
    }
}

/// A batch's results as `[{tool_use_id, tool_name, tool_response, is_error}]`.
pub(crate) fn batch_results(ev: &AfterToolBatch) -> Vec<Value> {
    ev.results()
        .iter()
        .map(|r| {
            json!({
                "tool_use_id": r.call_id,
                "tool_name": r.name,
                "tool_response": r.content,
                "is_error": r.is_error,
            })
        })
        .collect()
}
