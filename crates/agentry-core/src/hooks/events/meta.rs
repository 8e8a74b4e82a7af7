//! The `meta` group: HookStarted, HookFinished, HookFailed: each hook's own execution.

use super::Decides;
use crate::hooks::{EventKind, HookName};
use std::time::Duration;

/// A hook is about to run.
#[derive(Clone, Debug)]
pub struct HookStarted {
    /// The hook's name.
    hook: HookName,
    /// The event it handles.
    event: EventKind,
}
impl HookStarted {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(hook: HookName, event: EventKind) -> Self {
        HookStarted { hook, event }
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handles.
    pub fn event(&self) -> EventKind {
        self.event
    }
}
impl Decides for HookStarted {}

/// A hook finished.
#[derive(Clone, Debug)]
pub struct HookFinished {
    /// The hook's name.
    hook: HookName,
    /// The event it handled.
    event: EventKind,
    /// How long it took.
    duration: Duration,
    /// What it changed of the event.
    changed: Vec<String>,
}
impl HookFinished {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(hook: HookName, event: EventKind, duration: Duration) -> Self {
        HookFinished {
            hook,
            event,
            duration,
            changed: Vec::new(),
        }
    }
    /// The same event, saying what the hook changed (runtimes set it).
    pub fn with_changes(mut self, changed: Vec<String>) -> Self {
        self.changed = changed;
        self
    }
    /// What the hook changed of the event it handled: the names of the fields of the event's
    /// JSON form that differ from the event as the hook got it (`tool_input`, `system`,
    /// `messages`, ...), then `decision` when it took a decision (blocked, skipped, answered,
    /// ...). Empty when it changed nothing, and for a hook that ran on a read-only copy (an
    /// earlier hook's decision stood) or around a call (middleware).
    pub fn changed(&self) -> &[String] {
        &self.changed
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handled.
    pub fn event(&self) -> EventKind {
        self.event
    }
    /// How long it took.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}
impl Decides for HookFinished {}

/// A hook failed (an error, a panic or a timeout).
#[derive(Clone, Debug)]
pub struct HookFailed {
    /// The hook's name.
    hook: HookName,
    /// The event it handled.
    event: EventKind,
    /// How long it ran.
    duration: Duration,
    /// What went wrong.
    error: String,
    /// True when the hook is advisory and the run goes on.
    advisory: bool,
}
impl HookFailed {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hook: HookName,
        event: EventKind,
        duration: Duration,
        error: String,
        advisory: bool,
    ) -> Self {
        HookFailed {
            hook,
            event,
            duration,
            error,
            advisory,
        }
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handled.
    pub fn event(&self) -> EventKind {
        self.event
    }
    /// How long it ran.
    pub fn duration(&self) -> Duration {
        self.duration
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
    /// True when the hook is advisory and the run goes on.
    pub fn advisory(&self) -> bool {
        self.advisory
    }
}
impl Decides for HookFailed {}
