//! PreCompact and PostCompact: a history compacted, as Claude Code's hooks see it (trigger
//! `manual` when it was asked for, else `auto`); a compacted session starts again, as in
//! Claude Code.

use super::fields::COMPACTED;
use super::{EventName, with};
use crate::hooks::Engine;
use agentry_core::hooks::{AfterCompact, BeforeCompact, HookCtx, HookResult};
use serde_json::json;

impl Engine {
    /// PreCompact: a block vetoes the compaction.
    pub(crate) async fn pre_compact(
        &self,
        mut ev: BeforeCompact,
        ctx: &HookCtx,
    ) -> HookResult<BeforeCompact> {
        if !self.has(EventName::PreCompact) {
            return Ok(ev);
        }
        let site = self.claude.site(ctx);
        let trigger = trigger(ev.manual);
        let merged = self
            .fire(EventName::PreCompact, Some(trigger), &site, |m| {
                m.insert("trigger".into(), json!(trigger));
                m.insert("custom_instructions".into(), json!(""));
            })
            .await?;
        if let Some(reason) = merged.block {
            ev.veto(reason);
        }
        Ok(ev)
    }

    /// PostCompact observes the summary; then, for a top-level run, SessionStart with source
    /// `compact`, whose context joins the summary (so the context it gives survives).
    pub(crate) async fn post_compact(
        &self,
        mut ev: AfterCompact,
        ctx: &HookCtx,
    ) -> HookResult<AfterCompact> {
        let restart = self.has(EventName::SessionStart) && ctx.parent_run_id().is_none();
        if !self.has(EventName::PostCompact) && !restart {
            return Ok(ev);
        }
        let site = self.claude.site(ctx);
        if self.has(EventName::PostCompact) {
            let fields = self.claude_fields(&ev, &COMPACTED);
            let trigger = trigger(ev.manual);
            self.fire(EventName::PostCompact, Some(trigger), &site, |m| {
                m.insert("trigger".into(), json!(trigger));
                m.extend(fields);
            })
            .await?;
        }
        if restart && let Some(context) = self.session_start("compact", ctx, &site).await? {
            ev.summary = with(&ev.summary, &context);
        }
        Ok(ev)
    }
}

/// Claude Code's name for what started a compaction.
fn trigger(manual: bool) -> &'static str {
    match manual {
        true => "manual",
        false => "auto",
    }
}
