//! The limits every run of a runtime has by default, so that nothing waits forever, nothing
//! nests without end, and no model or tool makes a run hold as much as it likes.

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
/// How many bytes of arguments one tool call may have.
pub const DEFAULT_MAX_TOOL_INPUT_BYTES: usize = 1 << 20;
/// How many bytes of text one tool result may keep.
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: usize = 1 << 20;
/// How many tool calls of one model turn run.
pub const DEFAULT_MAX_TOOL_CALLS_PER_TURN: usize = 64;

/// A runtime's limits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub hook_timeout: Duration,
    pub model_turn_timeout: Duration,
    pub model_idle_timeout: Duration,
    pub tool_timeout: Duration,
    pub max_depth: u32,
    pub max_tool_input_bytes: usize,
    pub max_tool_result_bytes: usize,
    pub max_tool_calls_per_turn: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            model_turn_timeout: DEFAULT_MODEL_TURN_TIMEOUT,
            model_idle_timeout: DEFAULT_MODEL_IDLE_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            max_depth: DEFAULT_MAX_DEPTH,
            max_tool_input_bytes: DEFAULT_MAX_TOOL_INPUT_BYTES,
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            max_tool_calls_per_turn: DEFAULT_MAX_TOOL_CALLS_PER_TURN,
        }
    }
}
