//! Claude Code's events on agentry's lifecycle: what each command sees, and what its answer does.

use crate::command_hooks::{Inner, RunMemo};
use crate::event_name::EventName;
use crate::fire::{Merged, Site};
use crate::native::Native;
use crate::reply::Permission;
use crate::transcript::{Line, assistant_text};
use agentry_core::hooks::*;
use agentry_core::{Message, StopReason, ToolInfo};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// The agentry hook behind [`CommandHooks`](crate::CommandHooks).
pub(crate) struct Plugin {
    pub(crate) inner: Arc<Inner>,
    pub(crate) wants: Events,
}

/// After this many consecutive blocked stops, a run stops anyway (as Claude Code does).
const STOP_BLOCK_CAP: u32 = 8;

impl Inner {
    /// The session a run belongs to, as a filename-safe id: its session id, else its tree's root
    /// run id.
    fn session_id(&self, ctx: &HookCtx) -> String {
        crate::command_hooks::safe_session_id(ctx.session_id().unwrap_or_else(|| ctx.root_run_id()))
    }

    /// Fires SessionStart with `source` (`startup`, `resume`, `compact`) and returns the context
    /// its hooks give the model.
    async fn session_start(
        &self,
        source: &str,
        ctx: &HookCtx,
        site: &Site<'_>,
    ) -> Result<Option<String>, agentry_core::hooks::BoxError> {
        let agent = ctx.agent_name().to_string();
        let merged = self
            .fire(EventName::SessionStart, Some(source), site, |m| {
                m.insert("source".into(), json!(source));
                m.insert("agent_type".into(), json!(agent));
            })
            .await?;
        Ok(merged.reminder(EventName::SessionStart))
    }

    pub(crate) fn transcript_path(&self, session: &str) -> PathBuf {
        self.state_dir.join(format!("{session}.jsonl"))
    }

    fn agent_transcript_path(&self, session: &str, run_id: &str) -> PathBuf {
        self.state_dir
            .join(session)
            .join("subagents")
            .join(format!("agent-{run_id}.jsonl"))
    }

    pub(crate) fn env_file(&self, session: &str) -> PathBuf {
        self.state_dir.join(session).join("env.sh")
    }

    fn site<'a>(&self, ctx: &'a HookCtx) -> Site<'a> {
        let session_id = self.session_id(ctx);
        let transcript = self.transcript_path(&session_id);
        self.transcripts.touch(&transcript);
        Site {
            ctx: Some(ctx),
            session_id,
            transcript,
        }
    }

    fn memo<R>(&self, run_id: &str, f: impl FnOnce(&mut RunMemo) -> R) -> R {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        f(runs.entry(run_id.to_string()).or_default())
    }

    /// Attaches the context a PreToolUse hook gave for this call, once.
    fn take_call_context(&self, ctx: &HookCtx, call_id: &str) -> Option<String> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get_mut(ctx.run_id())?.contexts.remove(call_id)
    }

    fn tool_fields(&self, tool: &str, input: &Value) -> (String, Value) {
        let name = self.tool_names.claude_name(tool).to_string();
        let input = self
            .tool_names
            .claude_input(tool, input, &self.project_dir)
            .into_owned();
        (name, input)
    }
}

/// `text` with `addition` after it, on its own paragraph.
fn with(text: &str, addition: &str) -> String {
    if text.is_empty() {
        addition.to_string()
    } else {
        format!("{text}\n\n{addition}")
    }
}

/// A tool's result as `tool_response`: its JSON when it is JSON, else its text.
fn response(content: &str) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(content.to_string()),
    }
}

impl Hook for Plugin {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        self.inner.name.clone().into()
    }

    fn wants(&self) -> Events {
        self.wants
    }

    async fn run_start(&self, ev: RunStart, ctx: &HookCtx) -> HookResult<RunStart> {
        let ev = self.claude_run_start(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn run_end(&self, ev: RunEnd, ctx: &HookCtx) -> HookResult<RunEnd> {
        let ev = self.claude_run_end(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn run_failed(&self, ev: RunFailed, ctx: &HookCtx) -> HookResult<RunFailed> {
        let ev = self.claude_run_error(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn before_step(&self, ev: BeforeStep, ctx: &HookCtx) -> HookResult<BeforeStep> {
        self.native(ev, ctx).await
    }

    async fn after_step(&self, ev: AfterStep, ctx: &HookCtx) -> HookResult<AfterStep> {
        self.native(ev, ctx).await
    }

    async fn stop(&self, ev: Stop, ctx: &HookCtx) -> HookResult<Stop> {
        let ev = self.claude_stop(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn before_model(&self, mut ev: BeforeModel, ctx: &HookCtx) -> HookResult<BeforeModel> {
        let later = self
            .inner
            .later
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(ctx.run_id());
        if let Some(context) = later {
            ev.request.messages.push(Message::user(format!(
                "<system-reminder>\n{}\n</system-reminder>",
                context.join("\n")
            )));
        }
        self.native(ev, ctx).await
    }

    async fn after_model(&self, ev: AfterModel, ctx: &HookCtx) -> HookResult<AfterModel> {
        self.native(ev, ctx).await
    }

    async fn text_delta(&self, ev: TextDelta, ctx: &HookCtx) -> HookResult<TextDelta> {
        self.native(ev, ctx).await
    }

    async fn thinking(&self, ev: Thinking, ctx: &HookCtx) -> HookResult<Thinking> {
        self.native(ev, ctx).await
    }

    async fn before_tool(&self, ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        let ev = self.claude_before_tool(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn after_tool(&self, ev: AfterTool, ctx: &HookCtx) -> HookResult<AfterTool> {
        let ev = self.claude_after_tool(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn tool_failed(&self, ev: ToolFailed, ctx: &HookCtx) -> HookResult<ToolFailed> {
        let ev = self.claude_tool_error(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn before_sub_agent(
        &self,
        ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> HookResult<BeforeSubAgent> {
        let ev = self.claude_before_sub_agent(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn after_sub_agent(&self, ev: AfterSubAgent, ctx: &HookCtx) -> HookResult<AfterSubAgent> {
        self.native(ev, ctx).await
    }

    async fn sub_agent_failed(
        &self,
        ev: SubAgentFailed,
        ctx: &HookCtx,
    ) -> HookResult<SubAgentFailed> {
        self.native(ev, ctx).await
    }

    async fn approval_requested(
        &self,
        ev: ApprovalRequested,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalRequested> {
        let ev = self.claude_approval_requested(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn approval_resolved(
        &self,
        ev: ApprovalResolved,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalResolved> {
        self.native(ev, ctx).await
    }

    async fn stopped_by_human(
        &self,
        ev: StoppedByHuman,
        ctx: &HookCtx,
    ) -> HookResult<StoppedByHuman> {
        self.native(ev, ctx).await
    }

    async fn before_compact(&self, ev: BeforeCompact, ctx: &HookCtx) -> HookResult<BeforeCompact> {
        let ev = self.claude_before_compact(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn after_compact(&self, ev: AfterCompact, ctx: &HookCtx) -> HookResult<AfterCompact> {
        let ev = self.claude_after_compact(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn compact_failed(&self, ev: CompactFailed, ctx: &HookCtx) -> HookResult<CompactFailed> {
        self.native(ev, ctx).await
    }

    async fn state_change(&self, ev: StateChange, ctx: &HookCtx) -> HookResult<StateChange> {
        self.native(ev, ctx).await
    }

    async fn before_tool_batch(
        &self,
        ev: BeforeToolBatch,
        ctx: &HookCtx,
    ) -> HookResult<BeforeToolBatch> {
        self.native(ev, ctx).await
    }

    async fn after_tool_batch(
        &self,
        ev: AfterToolBatch,
        ctx: &HookCtx,
    ) -> HookResult<AfterToolBatch> {
        let inner = &*self.inner;
        if inner.has(EventName::PostToolBatch) {
            let site = inner.site(ctx);
            let calls: Vec<Value> = crate::native::batch_results(&ev)
                .into_iter()
                .map(|mut r| {
                    let name = r["tool_name"].as_str().unwrap_or_default().to_string();
                    r["tool_name"] = json!(inner.tool_names.claude_name(&name));
                    r
                })
                .collect();
            inner
                .fire(EventName::PostToolBatch, None, &site, |m| {
                    m.insert("tool_calls".into(), Value::Array(calls));
                })
                .await?;
        }
        self.native(ev, ctx).await
    }

    async fn message_added(&self, ev: MessageAdded, ctx: &HookCtx) -> HookResult<MessageAdded> {
        let ev = self.claude_message_added(ev, ctx).await?;
        self.native(ev, ctx).await
    }

    async fn custom(&self, ev: Custom, ctx: &HookCtx) -> HookResult<Custom> {
        self.native(ev, ctx).await
    }
}

impl Plugin {
    /// The commands registered under the agentry event's own name.
    async fn native<E: Native>(&self, mut ev: E, ctx: &HookCtx) -> HookResult<E> {
        let inner = &*self.inner;
        let event = EventName::Agentry(E::KIND);
        if !inner.has(event) {
            return Ok(ev);
        }
        let site = inner.site(ctx);
        let target = ev.target().map(str::to_string);
        let merged = inner
            .fire(event, target.as_deref(), &site, |m| ev.fields(m))
            .await?;
        ev.apply(merged);
        Ok(ev)
    }
}

/// Claude Code's events.
impl Plugin {
    async fn claude_before_tool(
        &self,
        mut ev: BeforeTool,
        ctx: &HookCtx,
    ) -> HookResult<BeforeTool> {
        let inner = &*self.inner;
        if !inner.has(EventName::PreToolUse) {
            return Ok(ev);
        }
        let (name, input) = inner.tool_fields(ev.name(), &ev.input);
        let site = inner.site(ctx);
        let call_id = ev.call_id().to_string();
        let info = ev.tool_info();
        let merged = inner
            .fire(EventName::PreToolUse, Some(&name), &site, |m| {
                m.insert("tool_name".into(), json!(name));
                m.insert("tool_input".into(), input);
                m.insert("tool_use_id".into(), json!(call_id));
                with_tool_info(m, info);
            })
            .await?;
        if let Some(reminder) = merged.reminder(EventName::PreToolUse) {
            inner.memo(ctx.run_id(), |m| m.contexts.insert(call_id, reminder));
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
            ev.input = inner.tool_names.agentry_input(ev.name(), updated);
        }
        Ok(ev)
    }

    async fn claude_after_tool(&self, mut ev: AfterTool, ctx: &HookCtx) -> HookResult<AfterTool> {
        let inner = &*self.inner;
        if let Some(context) = inner.take_call_context(ctx, ev.call_id()) {
            ev.content = with(&ev.content, &context);
        }
        // A call that did not run (blocked, rejected, bad arguments) has no PostToolUse.
        if !inner.has(EventName::PostToolUse) || ev.is_error {
            return Ok(ev);
        }
        let (name, input) = inner.tool_fields(ev.name(), ev.input());
        let site = inner.site(ctx);
        let tool_response = response(&ev.content);
        let call_id = ev.call_id().to_string();
        let info = ev.tool_info();
        let merged = inner
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

    async fn claude_tool_error(&self, mut ev: ToolFailed, ctx: &HookCtx) -> HookResult<ToolFailed> {
        let inner = &*self.inner;
        let mut error = ev.error().to_string();
        if let Some(context) = inner.take_call_context(ctx, ev.call_id()) {
            error = with(&error, &context);
        }
        if inner.has(EventName::PostToolUseFailure) {
            let (name, input) = inner.tool_fields(ev.name(), ev.input());
            let site = inner.site(ctx);
            let call_id = ev.call_id().to_string();
            let failure = ev.error().to_string();
            let info = ev.tool_info();
            let merged = inner
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

    async fn claude_run_start(&self, mut ev: RunStart, ctx: &HookCtx) -> HookResult<RunStart> {
        let inner = &*self.inner;
        // Prompts come from users only in top-level runs; a sub-agent's input is its parent's.
        if ctx.parent_run_id().is_some() {
            return Ok(ev);
        }
        // A session whose transcript already holds turns (written by an earlier process) is
        // resumed, as `claude --resume` is; else it starts up.
        let session = inner.session_id(ctx);
        let resumed = tokio::task::spawn_blocking({
            let path = inner.transcript_path(&session);
            move || std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
        })
        .await
        .unwrap_or(false);
        let site = inner.site(ctx);
        let first = inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(site.session_id.clone());
        let mut added = Vec::new();
        if first && inner.has(EventName::SessionStart) {
            let source = if resumed { "resume" } else { "startup" };
            added.extend(inner.session_start(source, ctx, &site).await?);
        }
        if inner.has(EventName::UserPromptSubmit) {
            let prompt = ev.input.clone();
            let merged = inner
                .fire(EventName::UserPromptSubmit, None, &site, |m| {
                    m.insert("prompt".into(), json!(prompt));
                })
                .await?;
            if let Some(reason) = merged.block {
                // The prompt is erased and the run stops; the reason is for the user only.
                ev.input.clear();
                ctx.run().stop_at(
                    tokio::time::Instant::now(),
                    StopReason::Hook {
                        hook: "UserPromptSubmit".into(),
                        reason,
                    },
                );
                return Ok(ev);
            }
            added.extend(merged.reminder(EventName::UserPromptSubmit));
        }
        for text in added {
            ev.input = with(&ev.input, &text);
        }
        Ok(ev)
    }

    async fn claude_stop(&self, mut ev: Stop, ctx: &HookCtx) -> HookResult<Stop> {
        let inner = &*self.inner;
        let event = if ctx.parent_run_id().is_some() {
            EventName::SubagentStop
        } else {
            EventName::Stop
        };
        // As in Claude Code, an interruption fires no Stop hook.
        if !inner.has(event) || matches!(ev.reason(), StopReason::Cancelled) {
            return Ok(ev);
        }
        let site = inner.site(ctx);
        let run_id = ctx.run_id().to_string();
        let (active, remembered) =
            inner.memo(&run_id, |m| (m.stop_blocks > 0, m.last_assistant.clone()));
        let last = match ev.output() {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
            None => remembered,
        };
        let agent_transcript = (event == EventName::SubagentStop)
            .then(|| inner.agent_transcript_path(&site.session_id, &run_id));
        let agent = ctx.agent_name().to_string();
        let merged = inner
            .fire(event, Some(&agent), &site, |m| {
                m.insert("stop_hook_active".into(), json!(active));
                m.insert("last_assistant_message".into(), json!(last));
                if let Some(path) = agent_transcript {
                    m.insert(
                        "agent_transcript_path".into(),
                        json!(path.display().to_string()),
                    );
                }
            })
            .await?;
        let reminder = merged.reminder(event);
        let feedback = match (merged.block, reminder) {
            (Some(reason), Some(context)) => Some(with(&reason, &context)),
            (Some(reason), None) => Some(reason),
            (None, context) => context,
        };
        let blocks = inner.memo(&run_id, |m| {
            if feedback.is_some() && ev.reason().is_natural() {
                m.stop_blocks += 1;
            } else {
                m.stop_blocks = 0;
            }
            m.stop_blocks
        });
        if let Some(feedback) = feedback
            && ev.reason().is_natural()
            && blocks <= STOP_BLOCK_CAP
        {
            ev.veto(feedback);
        }
        Ok(ev)
    }

    async fn claude_before_sub_agent(
        &self,
        mut ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> HookResult<BeforeSubAgent> {
        let inner = &*self.inner;
        if !inner.has(EventName::SubagentStart) {
            return Ok(ev);
        }
        let site = inner.site(ctx);
        let (agent, call_id) = (ev.agent().to_string(), ev.call_id().to_string());
        let merged = inner
            .fire(EventName::SubagentStart, Some(&agent), &site, |m| {
                m.insert("agent_id".into(), json!(call_id));
                m.insert("agent_type".into(), json!(agent));
            })
            .await?;
        if let Some(reminder) = merged.reminder(EventName::SubagentStart) {
            ev.input = with(&ev.input, &reminder);
        }
        Ok(ev)
    }

    async fn claude_before_compact(
        &self,
        mut ev: BeforeCompact,
        ctx: &HookCtx,
    ) -> HookResult<BeforeCompact> {
        let inner = &*self.inner;
        if !inner.has(EventName::PreCompact) {
            return Ok(ev);
        }
        let site = inner.site(ctx);
        let merged = inner
            .fire(EventName::PreCompact, Some("auto"), &site, |m| {
                m.insert("trigger".into(), json!("auto"));
                m.insert("custom_instructions".into(), json!(""));
            })
            .await?;
        if let Some(reason) = merged.block {
            ev.veto(reason);
        }
        Ok(ev)
    }

    async fn claude_after_compact(
        &self,
        mut ev: AfterCompact,
        ctx: &HookCtx,
    ) -> HookResult<AfterCompact> {
        let inner = &*self.inner;
        let restart = inner.has(EventName::SessionStart) && ctx.parent_run_id().is_none();
        if !inner.has(EventName::PostCompact) && !restart {
            return Ok(ev);
        }
        let site = inner.site(ctx);
        if inner.has(EventName::PostCompact) {
            let summary = ev.summary.clone();
            inner
                .fire(EventName::PostCompact, Some("auto"), &site, |m| {
                    m.insert("trigger".into(), json!("auto"));
                    m.insert("compact_summary".into(), json!(summary));
                })
                .await?;
        }
        // As in Claude Code, a compacted session starts again (source `compact`): what its
        // SessionStart hooks add joins the summary, so the context they give survives.
        if restart && let Some(context) = inner.session_start("compact", ctx, &site).await? {
            ev.summary = with(&ev.summary, &context);
        }
        Ok(ev)
    }

    async fn claude_approval_requested(
        &self,
        mut ev: ApprovalRequested,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalRequested> {
        let inner = &*self.inner;
        let site = inner.site(ctx);
        let pending = ev.pending().clone();
        let (name, input) = inner.tool_fields(&pending.tool, &pending.input);
        if inner.has(EventName::Notification) {
            let message = format!("agentry needs your permission to use {name}");
            inner
                .fire(
                    EventName::Notification,
                    Some("permission_prompt"),
                    &site,
                    |m| {
                        m.insert("message".into(), json!(message));
                        m.insert("title".into(), json!("Permission needed"));
                        m.insert("notification_type".into(), json!("permission_prompt"));
                    },
                )
                .await?;
        }
        if inner.has(EventName::PermissionRequest) {
            let merged: Merged = inner
                .fire(EventName::PermissionRequest, Some(&name), &site, |m| {
                    m.insert("tool_name".into(), json!(name));
                    m.insert("tool_input".into(), input);
                    m.insert("permission_suggestions".into(), json!([]));
                })
                .await?;
            if let Some(decision) = merged.permission_request {
                if decision.allow {
                    ev.approve();
                } else {
                    let message = decision.message.unwrap_or_else(|| {
                        format!("{name} was denied by a PermissionRequest hook")
                    });
                    if decision.interrupt {
                        ev.reject_and_stop(message);
                    } else {
                        ev.reject(message);
                    }
                }
            }
        }
        Ok(ev)
    }

    async fn claude_message_added(
        &self,
        ev: MessageAdded,
        ctx: &HookCtx,
    ) -> HookResult<MessageAdded> {
        let inner = &*self.inner;
        let session = inner.session_id(ctx);
        let main = inner.transcript_path(&session);
        let sub = ctx
            .parent_run_id()
            .map(|_| inner.agent_transcript_path(&session, ctx.run_id()));
        let message = ev.message();
        inner.transcripts.append(
            Line {
                path: sub.as_deref().unwrap_or(&main),
                session_id: &session,
                cwd: &inner.project_dir,
                agent_id: sub.as_ref().map(|_| ctx.run_id()),
            },
            message,
            &inner.tool_names,
        );
        if let Some(text) = assistant_text(message) {
            let text = text.to_string();
            inner.memo(ctx.run_id(), |m| m.last_assistant = Some(text));
        }
        Ok(ev)
    }

    async fn claude_run_end(&self, ev: RunEnd, ctx: &HookCtx) -> HookResult<RunEnd> {
        self.ended(ctx, "other").await?;
        Ok(ev)
    }

    async fn claude_run_error(&self, ev: RunFailed, ctx: &HookCtx) -> HookResult<RunFailed> {
        self.ended(ctx, "other").await?;
        Ok(ev)
    }
}

impl Plugin {
    /// A run ended: forget what was kept for it; a top-level run without a session id was its
    /// own session, which ends with it.
    async fn ended(&self, ctx: &HookCtx, reason: &str) -> HookResult<()> {
        let inner = &*self.inner;
        inner
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(ctx.run_id());
        inner
            .later
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(ctx.run_id());
        if ctx.parent_run_id().is_some() {
            let session = inner.session_id(ctx);
            let path = inner.agent_transcript_path(&session, ctx.run_id());
            inner.transcripts.close(&[&path]);
            return Ok(());
        }
        if ctx.session_id().is_some() {
            return Ok(());
        }
        let site = inner.site(ctx);
        if inner.has(EventName::SessionEnd) {
            inner
                .fire(EventName::SessionEnd, Some(reason), &site, |m| {
                    m.insert("reason".into(), json!(reason));
                })
                .await?;
        }
        inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&site.session_id);
        inner.transcripts.close(&[&site.transcript]);
        Ok(())
    }
}

/// Adds what a tool declares about itself (the MCP server that serves it, its annotations) to
/// the payload's `agentry` object, when it declares anything: an extension Claude Code's
/// scripts ignore and agentry-aware ones can read (`.agentry.tool.annotations.destructiveHint`).
fn with_tool_info(payload: &mut serde_json::Map<String, Value>, info: Option<&ToolInfo>) {
    let Some(info) = info else { return };
    if let Some(Value::Object(agentry)) = payload.get_mut("agentry")
        && let Ok(value) = serde_json::to_value(info)
    {
        agentry.insert("tool".into(), value);
    }
}
