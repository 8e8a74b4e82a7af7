//! PreToolUse, PostToolUse, PostToolUseFailure and PostToolBatch: a tool call as Claude Code's
//! hooks see it (its tool under a Claude Code name, its input with Claude Code's field names),
//! and what their answers do to it.

use super::payload::with_tool_info;
use super::{EventName, with};
use crate::command::Permission;
use crate::hooks::Engine;
use agentry_core::hooks::{AfterTool, AfterToolBatch, BeforeTool, HookCtx, HookResult, ToolFailed};
use serde_json::{Value, json};

/// A tool's result as `tool_response`: its JSON when it is JSON, else its text.
fn response(content: &str) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(content.to_string()),
    }
}

impl Engine {
    /// The tool's Claude Code name, and its input as Claude Code's hooks read it.
    pub(super) fn tool_fields(&self, tool: &str, input: &Value) -> (String, Value) {
        let names = &self.claude.tool_names;
        let name = names.claude_name(tool).to_string();
        let input = names
            .claude_input(tool, input, &self.project_dir)
            .into_owned();
        (name, input)
    }

    /// PreToolUse: deny blocks the call, ask pauses it for approval, `updatedInput` rewrites
    /// its input; context waits for the call's result.
    pub(crate) async fn pre_tool_use(
        &self,
        mut ev: BeforeTool,
        ctx: &HookCtx,
    ) -> HookResult<BeforeTool> {
        if !self.has(EventName::PreToolUse) {
            return Ok(ev);
        }
        let (name, input) = self.tool_fields(ev.name(), &ev.input);
        let site = self.claude.site(ctx);
        let call_id = ev.call_id().to_string();
        let info = ev.tool_info();
        let merged = self
            .fire(EventName::PreToolUse, Some(&name), &site, |m| {
                m.insert("tool_name".into(), json!(name));
                m.insert("tool_input".into(), input);
                m.insert("tool_use_id".into(), json!(call_id));
                with_tool_info(m, info);
            })
            .await?;
        if let Some(reminder) = merged.reminder(EventName::PreToolUse) {
            self.claude
                .memo(ctx.run_id(), |m| m.contexts.insert(call_id, reminder));
        }
        match merged.permission {
            Some((Permission::Deny, reason)) => {
                ev.block(
                    reason.unwrap_or_else(|| format!("{name} was blocked by a PreToolUse hook")),
                );
                return Ok(ev);
            }
            Some((Permission::Ask, reason)) => ev.require_approval(
                reason.unwrap_or_else(|| format!("a PreToolUse hook asks to approve {name}")),
            ),
            _ => {}
        }
        if let Some(updated) = merged.updated_input {
            ev.input = self.claude.tool_names.agentry_input(ev.name(), updated);
        }
        Ok(ev)
    }

    /// PostToolUse: a block's reason and context join what the model sees, an
    /// `updatedToolOutput` replaces it. The context PreToolUse gave joins it first.
    pub(crate) async fn post_tool_use(
        &self,
        mut ev: AfterTool,
        ctx: &HookCtx,
    ) -> HookResult<AfterTool> {
        if let Some(context) = self.claude.take_call_context(ctx.run_id(), ev.call_id()) {
            ev.content = with(&ev.content, &context);
        }
        // A call that did not run (blocked, rejected, bad arguments) has no PostToolUse.
        if !self.has(EventName::PostToolUse) || ev.is_error {
            return Ok(ev);
        }
        let (name, input) = self.tool_fields(ev.name(), ev.input());
        let site = self.claude.site(ctx);
        let tool_response = response(&ev.content);
        let call_id = ev.call_id().to_string();
        let info = ev.tool_info();
        let merged = self
            .fire(EventName::PostToolUse, Some(&name), &site, |m| {
                m.insert("tool_name".into(), json!(name));
                m.insert("tool_input".into(), input);
                m.insert("tool_response".into(), tool_response);
                m.insert("tool_use_id".into(), json!(call_id));
                with_tool_info(m, info);
            })
            .await?;
        if let Some(output) = &merged.updated_output {
            ev.content = match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
        }
        if let Some(reason) = &merged.block {
            ev.content = with(&ev.content, reason);
        }
        if let Some(reminder) = merged.reminder(EventName::PostToolUse) {
            ev.content = with(&ev.content, &reminder);
        }
        Ok(ev)
    }

    /// PostToolUseFailure: a block's reason and context join the error the model sees, after
    /// the context PreToolUse gave.
    pub(crate) async fn post_tool_use_failure(
        &self,
        mut ev: ToolFailed,
        ctx: &HookCtx,
    ) -> HookResult<ToolFailed> {
        let mut error = ev.error().to_string();
        if let Some(context) = self.claude.take_call_context(ctx.run_id(), ev.call_id()) {
            error = with(&error, &context);
        }
        if self.has(EventName::PostToolUseFailure) {
            let (name, input) = self.tool_fields(ev.name(), ev.input());
            let site = self.claude.site(ctx);
            let call_id = ev.call_id().to_string();
            let failure = ev.error().to_string();
            let info = ev.tool_info();
            let merged = self
                .fire(EventName::PostToolUseFailure, Some(&name), &site, |m| {
                    m.insert("tool_name".into(), json!(name));
                    m.insert("tool_input".into(), input);
                    m.insert("tool_use_id".into(), json!(call_id));
                    m.insert("error".into(), json!(failure));
                    with_tool_info(m, info);
                })
                .await?;
            if let Some(reason) = &merged.block {
                error = with(&error, reason);
            }
            if let Some(reminder) = merged.reminder(EventName::PostToolUseFailure) {
                error = with(&error, &reminder);
            }
        }
        if error != ev.error() {
            ev.rewrite_error(error);
        }
        Ok(ev)
    }

    /// PostToolBatch: the results of one model turn's calls, observed together, each under its
    /// tool's Claude Code name.
    pub(crate) async fn post_tool_batch(
        &self,
        ev: &AfterToolBatch,
        ctx: &HookCtx,
    ) -> HookResult<()> {
        if !self.has(EventName::PostToolBatch) {
            return Ok(());
        }
        let site = self.claude.site(ctx);
        // The event's own `tool_results`, each tool under its Claude Code name, as `tool_calls`.
        let mut calls = match serde_json::to_value(ev).expect("an event serializes") {
            Value::Object(mut fields) => fields.remove("tool_results"),
            _ => None,
        }
        .unwrap_or_default();
        if let Value::Array(results) = &mut calls {
            for r in results {
                let name = r["tool_name"].as_str().unwrap_or_default().to_string();
                r["tool_name"] = json!(self.claude.tool_names.claude_name(&name));
            }
        }
        self.fire(EventName::PostToolBatch, None, &site, |m| {
            m.insert("tool_calls".into(), calls);
        })
        .await?;
        Ok(())
    }
}
