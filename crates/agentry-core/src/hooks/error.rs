//! What a failing hook produces: an error that names the hook and the event.

use super::EventKind;
use std::time::Duration;

/// What a hook returns on failure: any error type converts into it with `?`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result a hook returns: the event, possibly changed, or an error.
pub type HookResult<T> = Result<T, BoxError>;

/// A hook that failed: its name, the event it was handling, and how it failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("hook `{hook}` failed on {event}: {failure}")]
pub struct HookError {
    /// The hook's name.
    pub hook: String,
    /// The event it was handling.
    pub event: EventKind,
    /// How it failed.
    pub failure: HookFailure,
}

/// How a hook failed. An error, a panic and a timeout are treated alike (per the hook's policy).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    /// The hook returned an error.
    #[error("returned an error: {0}")]
    Error(String),
    /// The hook panicked.
    #[error("panicked: {0}")]
    Panic(String),
    /// The hook overran its own timeout (`.timeout(..)` at registration).
    #[error(
        "timed out after {0:?}, its own timeout (`.timeout(..)`); raise it or make the hook faster"
    )]
    Timeout(Duration),
    /// The hook, which has no timeout of its own, overran the runtime's default hook timeout.
    #[error(
        "timed out after {0:?}, the default hook timeout (`hook_timeout` under `[limits]` in agentry.toml, `Runtime::hook_timeout` in code); give the hook a longer one with `.timeout(..)` or make it faster"
    )]
    DefaultTimeout(Duration),
}
