//! Ending a session that spans several runs (a chat): SessionEnd hooks, and its transcript
//! closed.

use crate::command_hooks::Inner;
use crate::event_name::EventName;
use crate::fire::Site;
use agentry_core::hooks::BoxError;
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
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("hooks", &self.inner.name)
            .finish()
    }
}

impl Sessions {
    /// Ends session `session_id`: runs the SessionEnd hooks whose matcher fits `reason`
    /// (Claude Code's reasons: `clear`, `logout`, `prompt_input_exit`, `other`) and closes the
    /// session's transcript. A SessionStart runs again if the session goes on later.
    pub async fn end(&self, session_id: &str, reason: &str) -> Result<(), BoxError> {
        let inner = &*self.inner;
        let session_id = crate::command_hooks::safe_session_id(session_id);
        let site = Site {
            ctx: None,
            transcript: inner.transcript_path(&session_id),
            session_id,
        };
        let fired = if inner.has(EventName::SessionEnd) {
            inner
                .fire(EventName::SessionEnd, Some(reason), &site, |m| {
                    m.insert("reason".into(), json!(reason));
                })
                .await
                .map(|_| ())
        } else {
            Ok(())
        };
        inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&site.session_id);
        inner.transcripts.close(&[&site.transcript]);
        fired
    }
}
