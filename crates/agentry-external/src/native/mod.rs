//! Every agentry event under its own name: the payload is the event's JSON form (its
//! `Serialize` in agentry-core, documented on `agentry_core::hooks::events`) beside the fields
//! every payload carries; what a command's answer does to the event follows.
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
use crate::media::content_from_hook;
use agentry_core::Content;
use agentry_core::hooks::*;
use serde::Serialize;
use serde_json::{Map, Value};

/// An agentry event a command can handle under its own name: its fields are its JSON form.
pub(crate) trait Native: Event + Serialize {
    /// What a matcher is tested against (a tool name, an agent name), if anything.
    fn target(&self) -> Option<&str> {
        None
    }
    /// Applies what the commands decided.
    fn apply(&mut self, merged: Merged) {
        let _ = merged;
    }
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
            .fire(event, target.as_deref(), &site, |m| add_fields(m, &ev))
            .await?;
        ev.apply(merged);
        Ok(ev)
    }
}

/// Adds the event's JSON form to the payload.
fn add_fields(payload: &mut Map<String, Value>, ev: &impl Serialize) {
    match serde_json::to_value(ev).expect("an event serializes") {
        Value::Object(fields) => payload.extend(fields),
        other => unreachable!("an event serializes to a JSON object, not {other}"),
    }
}

/// Adds the context the commands of `kind` gave after `content`.
fn add_context(content: &mut Content, merged: &Merged, kind: EventKind) {
    if let Some(reminder) = merged.reminder(EventName::Agentry(kind)) {
        content.append_paragraph(&reminder);
    }
}

impl Native for RunStart {
    fn apply(&mut self, merged: Merged) {
        if let Some(input) = &merged.updated_input {
            self.input = content_from_hook(input, &self.input);
        }
        add_context(&mut self.input, &merged, Self::KIND);
    }
}

impl Native for RunEnd {}

impl Native for RunFailed {}

impl Native for BeforeStep {
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.stop(reason);
        }
    }
}

impl Native for AfterStep {
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.stop(reason);
        }
    }
}

impl Native for Stop {
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block
            && self.reason().is_natural()
        {
            self.veto(reason);
        }
    }
}

impl Native for BeforeModel {}

impl Native for AfterModel {
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.retry(reason);
        }
    }
}

/// The streamed-text events: a block aborts the stream.
macro_rules! streamed_text {
    ($($ty:ident),*) => {$(
        impl Native for $ty {
            fn apply(&mut self, merged: Merged) {
                if let Some(reason) = merged.block {
                    self.abort(reason);
                }
            }
        }
    )*};
}
streamed_text!(TextDelta, Thinking);

impl Native for BeforeTool {
    fn target(&self) -> Option<&str> {
        Some(self.name())
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
    fn apply(&mut self, merged: Merged) {
        if let Some(output) = &merged.updated_output {
            self.content = content_from_hook(output, &self.content);
        }
        add_context(&mut self.content, &merged, Self::KIND);
    }
}

impl Native for ToolFailed {
    fn target(&self) -> Option<&str> {
        Some(self.name())
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reminder) = merged.reminder(EventName::Agentry(Self::KIND)) {
            let error = self.rewritten_error().unwrap_or(self.error());
            let text = match error.is_empty() {
                true => reminder,
                false => format!("{error}\n\n{reminder}"),
            };
            self.rewrite_error(text);
        }
    }
}

impl Native for BeforeSubAgent {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.block(reason);
            return;
        }
        if let Some(input) = &merged.updated_input {
            self.input = match input {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
        }
        if let Some(reminder) = merged.reminder(EventName::Agentry(Self::KIND)) {
            self.input = match self.input.is_empty() {
                true => reminder,
                false => format!("{}\n\n{reminder}", self.input),
            };
        }
    }
}

impl Native for AfterSubAgent {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
}

impl Native for SubAgentFailed {
    fn target(&self) -> Option<&str> {
        Some(self.agent())
    }
}

impl Native for ApprovalRequested {
    fn target(&self) -> Option<&str> {
        Some(&self.pending().tool)
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
}

impl Native for StoppedByHuman {}

impl Native for BeforeCompact {
    fn apply(&mut self, merged: Merged) {
        if let Some(reason) = merged.block {
            self.veto(reason);
        }
    }
}

impl Native for AfterCompact {}

impl Native for CompactFailed {}

impl Native for StateChange {}

impl Native for MessageAdded {}

impl Native for Custom {}

impl Native for BeforeToolBatch {
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

impl Native for AfterToolBatch {}

#[cfg(test)]
mod tests;
