//! Claude Code's sessions on agentry's runs: SessionStart when a session's first run starts
//! (and again after its history was compacted), SessionEnd when it ends, with the run of a
//! top-level run without a session id, or when its owner says so ([`Sessions::end`]).

use super::site::{safe_session_id, session_id};
use super::{ClaudeState, EventName, Site};
use crate::hooks::Engine;
use agentry_core::hooks::{BoxError, HookCtx, HookResult};
use serde_json::json;
use std::sync::Arc;

/// A handle on the sessions of registered [`CommandHooks`](crate::CommandHooks), from
/// [`CommandHooks::into_hook_and_sessions`](crate::CommandHooks::into_hook_and_sessions).
///
/// A top-level run without a session id is a session of its own and ends with the run. Runs
/// that share a session id belong to a longer conversation, which only its owner knows the end
/// of: call [`end`](Self::end) when it ends, as Claude Code does when its user leaves.
#[derive(Clone)]
pub struct Sessions {
    pub(crate) engine: Arc<Engine>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("hooks", &self.engine.name)
            .finish()
    }
}

impl Sessions {
    /// Ends session `session_id`: runs the SessionEnd hooks whose matcher fits `reason`
    /// (Claude Code's reasons: `clear`, `logout`, `prompt_input_exit`, `other`) and closes the
    /// session's transcript. A SessionStart runs again if the session goes on later. A session
    /// none of these hooks' runs belonged to (or one already ended) is left alone.
    pub async fn end(&self, session_id: &str, reason: &str) -> Result<(), BoxError> {
        // Only a session these hooks saw start (one of their runs belonged to it): hooks
        // scoped to other agents' runs never saw it, and ending it again fires nothing.
        if !self
            .engine
            .claude
            .knows_session(&safe_session_id(session_id))
        {
            return Ok(());
        }
        self.end_with(session_id, reason, None).await
    }

    /// Fires SessionEnd for session `session_id` with `reason` whether or not it started here,
    /// with `sample`'s fields set over the payload (`transcript_path`, ...): how `agentry hooks
    /// test` tries SessionEnd hooks on a sample.
    pub async fn end_sample(
        &self,
        session_id: &str,
        reason: &str,
        sample: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), BoxError> {
        self.end_with(session_id, reason, Some(sample)).await
    }

    /// True when these hooks act on runs of agent `agent`.
    pub fn acts_on(&self, agent: &str) -> bool {
        self.engine.agents.includes(agent)
    }

    async fn end_with(
        &self,
        session_id: &str,
        reason: &str,
        sample: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<(), BoxError> {
        let engine = &*self.engine;
        let session_id = safe_session_id(session_id);
        let site = Site {
            ctx: None,
            transcript: engine.claude.transcript_path(&session_id),
            session_id,
            sample,
        };
        let fired = if engine.has(EventName::SessionEnd) {
            engine.session_end(reason, &site).await
        } else {
            Ok(())
        };
        engine.claude.end_session(&site);
        fired
    }

    /// Clears the conversation, as Claude Code's `/clear` does: session `old` ends (SessionEnd
    /// `clear`), and session `new` starts with SessionStart `clear` at its first run.
    pub async fn clear(&self, old: &str, new: &str) -> Result<(), BoxError> {
        self.engine
            .claude
            .cleared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(safe_session_id(new));
        self.end(old, "clear").await
    }
}

impl ClaudeState {
    /// Notes that session `session_id` started in this process: true when it had not yet.
    pub(super) fn start_session(&self, session_id: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_id.to_string())
    }

    /// True when session `session_id` started in this process and has not ended.
    pub(super) fn knows_session(&self, session_id: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(session_id)
    }

    /// True (once) when session `session_id` replaces a cleared one.
    pub(super) fn take_cleared(&self, session_id: &str) -> bool {
        self.cleared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session_id)
    }

    /// Forgets session `session_id` and closes its transcript.
    fn end_session(&self, site: &Site<'_>) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&site.session_id);
        self.transcripts.close(&[&site.transcript]);
    }
}

impl Engine {
    /// Fires SessionStart with `source` (`startup`, `resume`, `clear`, `compact`) and returns the context
    /// its hooks give the model.
    pub(super) async fn session_start(
        &self,
        source: &str,
        ctx: &HookCtx,
        site: &Site<'_>,
    ) -> Result<Option<String>, BoxError> {
        let agent = ctx.agent_name().to_string();
        let merged = self
            .fire(EventName::SessionStart, Some(source), site, |m| {
                m.insert("source".into(), json!(source));
                m.insert("agent_type".into(), json!(agent));
            })
            .await?;
        Ok(merged.reminder(EventName::SessionStart))
    }

    /// Fires SessionEnd with `reason`.
    async fn session_end(&self, reason: &str, site: &Site<'_>) -> Result<(), BoxError> {
        self.fire(EventName::SessionEnd, Some(reason), site, |m| {
            m.insert("reason".into(), json!(reason));
        })
        .await?;
        Ok(())
    }

    /// A run ended (RunEnd or RunFailed): forget what was kept for it; a sub-agent's run closes
    /// its transcript; a top-level run without a session id was its own session, which ends
    /// with it (reason `other`).
    pub(crate) async fn run_ended(&self, ctx: &HookCtx) -> HookResult<()> {
        self.claude.forget_run(ctx.run_id());
        self.commands.later.forget(ctx.run_id());
        if ctx.parent_run_id().is_some() {
            let session = session_id(ctx);
            let path = self.claude.agent_transcript_path(&session, ctx.run_id());
            self.claude.transcripts.close(&[&path]);
            return Ok(());
        }
        if ctx.session_id().is_some() {
            return Ok(());
        }
        let site = self.claude.site(ctx);
        if self.has(EventName::SessionEnd) {
            self.session_end("other", &site).await?;
        }
        self.claude.end_session(&site);
        Ok(())
    }
}
