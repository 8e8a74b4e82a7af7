//! Sessions: a run with a session id starts where the session's last run left off, with its
//! messages loaded from the store.

use super::driver::Driver;
use agentry_core::{Error, RunQuery, RunStatus};

impl Driver {
    /// True when this new run continues a session from the store: a top-level run with a
    /// session id. (A sub-agent's run shares its parent's session for hooks and traces, but
    /// starts afresh: its parent is the session's run under way.)
    pub(crate) fn continues_session(&self) -> bool {
        self.rt.store.is_some()
            && self.scope.context().info().session_id.is_some()
            && self.scope.context().parent_run_id().is_none()
    }

    /// Starts the run with the messages of its session's last top-level run, or says why the
    /// session cannot go on.
    pub(crate) async fn continue_session(&mut self) -> Result<(), Error> {
        if !self.continues_session() {
            return Ok(());
        }
        let (Some(store), Some(session)) = (
            self.rt.store.clone(),
            self.scope.context().info().session_id.clone(),
        ) else {
            return Ok(());
        };
        let runs = store.list(&RunQuery::session(session.as_str())).await?;
        let Some(last) = runs.iter().find(|r| r.parent_run_id.is_none()) else {
            return Ok(());
        };
        let fail = |message: String| Error::Session {
            session_id: session.clone(),
            message,
        };
        let stored = store.load(&last.run_id).await?.ok_or_else(|| {
            fail(format!(
                "its last run `{}` vanished from the store",
                last.run_id
            ))
        })?;
        let snapshot = stored.snapshot;
        match snapshot.status() {
            RunStatus::AwaitingApproval => {
                return Err(fail(format!(
                    "its last run `{}` waits for approval; decide it first with `Runtime::decide`",
                    last.run_id
                )));
            }
            RunStatus::Running => {
                return Err(fail(format!(
                    "its last run `{}` has not ended (it is under way, or its process died); wait for it or continue it with `Runtime::resume`",
                    last.run_id
                )));
            }
            RunStatus::Failed => {
                return Err(fail(format!(
                    "its last run `{}` failed ({}); continue it with `Runtime::resume` once the cause is fixed",
                    last.run_id,
                    snapshot.error.as_deref().unwrap_or("no error recorded")
                )));
            }
            RunStatus::Cancelled if !snapshot.pending_tool_calls.is_empty() => {
                return Err(fail(format!(
                    "its last run `{}` was cancelled during tool calls; continue it with `Runtime::resume` first",
                    last.run_id
                )));
            }
            RunStatus::Cancelled | RunStatus::Finished => {}
        }
        self.machine.set_history(snapshot.messages);
        Ok(())
    }
}
