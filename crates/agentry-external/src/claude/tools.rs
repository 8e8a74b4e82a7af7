//! PreToolUse, PostToolUse, PostToolUseFailure and PostToolBatch: a tool call as Claude Code's
//! hooks see it (its tool under a Claude Code name, its input with Claude Code's field names),
//! and what their answers do to it.

use super::fields::{TOOL_BATCH, TOOL_CALL, TOOL_FAILURE, TOOL_RESULT};
use super::payload::with_tool_info;
use super::{EventName, with};
use crate::command::Permission;
use crate::hooks::Engine;
use agentry_core::hooks::{AfterTool, AfterToolBatch, BeforeTool, HookCtx, HookResult, ToolFailed};
use serde_json::{Map, Value};

/// The Claude Code name of the tool `fields` name.
pub(super) fn tool_name(fields: &Map<String, Value>) -> String {
    fields
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Engine {
    /// PreToolUse: deny blocks the call, ask pauses it for approval, allow lets it run without
    /// asking (unless a rule asks), `updatedInput` rewrites its input; context waits for the
    /// call's result.
    pub(crate) async fn pre_tool_use(
        &self,
        mut ev: BeforeTool,
        ctx: &HookCtx,
    ) -> HookResult<BeforeTool> {
        if !self.has(EventName::PreToolUse) {
            return Ok(ev);
        }
        let fields = self.claude_fields(&ev, &TOOL_CALL);
        let name = tool_name(&fields);
        let site = self.claude.site(ctx);
        let call_id = ev.call_id().to_string();
        let info = ev.tool_info();
        let merged = self
            .fire(EventName::PreToolUse, Some(&name), &site, |m| {
                m.extend(fields);
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
            // Allow skips the approval the tool itself wants; a rule that asks or denies (the
            // tool policy) still applies, as Claude Code's permission rules do.
            Some((Permission::Allow, reason)) => {
                ev.allow(reason.unwrap_or_else(|| format!("a PreToolUse hook allowed {name}")))
            }
            _ => {}
        }
        if let Some(updated) = merged.updated_input {
            let mut updated = self.claude.tool_names.agentry_input(ev.name(), updated);
            if !self.see_secrets {
                unmask_unchanged(&mut updated, &ev.input, ctx);
            }
            ev.input = updated;
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
            ev.content.append_paragraph(&context);
        }
        // A call that did not run (blocked, rejected, bad arguments) has no PostToolUse.
        if !self.has(EventName::PostToolUse) || ev.is_error {
            return Ok(ev);
        }
        let fields = self.claude_fields(&ev, &TOOL_RESULT);
        let name = tool_name(&fields);
        let site = self.claude.site(ctx);
        let info = ev.tool_info();
        let merged = self
            .fire(EventName::PostToolUse, Some(&name), &site, |m| {
                m.extend(fields);
                with_tool_info(m, info);
            })
            .await?;
        if let Some(output) = &merged.updated_output {
            ev.content = crate::media::content_from_hook(output, &ev.content);
        }
        if let Some(reason) = &merged.block {
            ev.content.append_paragraph(reason);
        }
        if let Some(reminder) = merged.reminder(EventName::PostToolUse) {
            ev.content.append_paragraph(&reminder);
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
            let fields = self.claude_fields(&ev, &TOOL_FAILURE);
            let name = tool_name(&fields);
            let site = self.claude.site(ctx);
            let info = ev.tool_info();
            let merged = self
                .fire(EventName::PostToolUseFailure, Some(&name), &site, |m| {
                    m.extend(fields);
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
        let fields = self.claude_fields(ev, &TOOL_BATCH);
        self.fire(EventName::PostToolBatch, None, &site, |m| m.extend(fields))
            .await?;
        Ok(())
    }
}

/// Puts the real value back into every string of `updated` that is the masked form of the
/// string at the same place in `original`: a hook given a masked input that rewrote one field
/// hands back the others as it got them, masked.
fn unmask_unchanged(updated: &mut Value, original: &Value, ctx: &HookCtx) {
    match (updated, original) {
        (Value::String(now), Value::String(was))
            if now != was && ctx.redact(was) == now.as_str() =>
        {
            now.clone_from(was);
        }
        (Value::Array(now), Value::Array(was)) => {
            for (n, w) in now.iter_mut().zip(was) {
                unmask_unchanged(n, w, ctx);
            }
        }
        (Value::Object(now), Value::Object(was)) => {
            for (key, n) in now.iter_mut() {
                if let Some(w) = was.get(key) {
                    unmask_unchanged(n, w, ctx);
                }
            }
        }
        _ => {}
    }
}
