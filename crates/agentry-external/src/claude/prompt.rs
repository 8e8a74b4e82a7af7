//! UserPromptSubmit (and SessionStart, for a session's first run): the prompt of a top-level run
//! as Claude Code's hooks see it; a block erases it and stops the run, context joins it.

use super::EventName;
use super::fields::PROMPT;
use super::site::session_id;
use crate::hooks::Engine;
use agentry_core::StopReason;
use agentry_core::hooks::{HookCtx, HookResult, RunStart};

impl Engine {
    /// SessionStart when the run is its session's first in this process (`clear` when the
    /// session replaces a cleared one, `resume` when its transcript already holds turns, else
    /// `startup`), then UserPromptSubmit.
    /// Prompts come from users only in top-level runs: a sub-agent's run fires neither.
    pub(crate) async fn user_prompt_submit(
        &self,
        mut ev: RunStart,
        ctx: &HookCtx,
    ) -> HookResult<RunStart> {
        if ctx.parent_run_id().is_some() {
            return Ok(ev);
        }
        // A session whose transcript already holds turns (written by an earlier process) is
        // resumed, as `claude --resume` is; else it starts up.
        let session = session_id(ctx);
        let resumed = tokio::task::spawn_blocking({
            let path = self.claude.transcript_path(&session);
            move || std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
        })
        .await
        .unwrap_or(false);
        let site = self.claude.site(ctx);
        let first = self.claude.start_session(&site.session_id);
        let cleared = first && self.claude.take_cleared(&site.session_id);
        let mut added = Vec::new();
        if first && self.has(EventName::SessionStart) {
            let source = match (cleared, resumed) {
                (true, _) => "clear",
                (false, true) => "resume",
                (false, false) => "startup",
            };
            added.extend(self.session_start(source, ctx, &site).await?);
        }
        if self.has(EventName::UserPromptSubmit) {
            let fields = self.claude_fields(&ev, &PROMPT);
            let merged = self
                .fire(EventName::UserPromptSubmit, None, &site, |m| {
                    m.extend(fields)
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
            ev.input.append_paragraph(&text);
        }
        Ok(ev)
    }
}
