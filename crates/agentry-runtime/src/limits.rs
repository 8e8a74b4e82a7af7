//! The time and nesting limits every run of a runtime has by default, so that nothing waits
//! forever and nothing nests without end.

use std::time::Duration;

/// How long an async hook without a timeout of its own may take.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one model turn (the call, its retries and its around-model middleware) may take.
pub(crate) const DEFAULT_MODEL_TURN_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a model stream may go without an event (keep-alive comments are not events).
pub(crate) const DEFAULT_MODEL_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a tool call without a limit of its own may take.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// How deep runs may nest.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 8;

/// A runtime's limits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub hook_timeout: Duration,
    pub model_turn_timeout: Duration,
    pub model_idle_timeout: Duration,
    pub tool_timeout: Duration,
    pub max_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            model_turn_timeout: DEFAULT_MODEL_TURN_TIMEOUT,
            model_idle_timeout: DEFAULT_MODEL_IDLE_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}
