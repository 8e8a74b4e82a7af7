//! What the Claude Code mapping remembers of each run under way, between its events.

use super::ClaudeState;
use std::collections::HashMap;

/// What the hooks remember of one run under way.
#[derive(Default)]
pub(super) struct RunMemo {
    /// Consecutive stops a Stop hook blocked.
    pub(super) stop_blocks: u32,
    /// PreToolUse context waiting for its call's result, by call id.
    pub(super) contexts: HashMap<String, String>,
    /// The text of the run's last assistant message.
    pub(super) last_assistant: Option<String>,
}

impl ClaudeState {
    /// Runs `f` on what is remembered of run `run_id`.
    pub(super) fn memo<R>(&self, run_id: &str, f: impl FnOnce(&mut RunMemo) -> R) -> R {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        f(runs.entry(run_id.to_string()).or_default())
    }

    /// The context a PreToolUse hook gave for the call `call_id` of run `run_id`, once.
    pub(super) fn take_call_context(&self, run_id: &str, call_id: &str) -> Option<String> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get_mut(run_id)?.contexts.remove(call_id)
    }

    /// Forgets run `run_id` (it ended).
    pub(super) fn forget_run(&self, run_id: &str) {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(run_id);
    }
}
