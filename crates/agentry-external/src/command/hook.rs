//! One command hook built in Rust: an event, a matcher and a command, registered like any hook.

use super::spec::CommandSpec;
use crate::claude::EventName;
use crate::error::SettingsError;
use crate::hooks::CommandHooks;
use agentry_core::hooks::{HookRegistration, IntoHook};
use std::path::PathBuf;
use std::time::Duration;

/// One command hook built in Rust: an event, a matcher and a command.
///
/// ```
/// use agentry_core::hooks::Hooks;
/// use agentry_external::{CommandHook, EventName};
/// use std::time::Duration;
/// let mut hooks = Hooks::new();
/// hooks.add(
///     CommandHook::new(EventName::PreToolUse, "python3 .claude/hooks/guard.py")
///         .matcher("Bash|Write")
///         .timeout(Duration::from_secs(10)),
/// );
/// ```
pub struct CommandHook {
    event: EventName,
    matcher: String,
    spec: CommandSpec,
    project_dir: Option<PathBuf>,
    fail_closed: bool,
}

impl CommandHook {
    /// Runs the shell command line `command` on `event`, for every tool (or source).
    pub fn new(event: EventName, command: impl Into<String>) -> Self {
        CommandHook::with_spec(event, CommandSpec::shell(command))
    }

    /// Runs `spec` on `event`.
    pub fn with_spec(event: EventName, spec: CommandSpec) -> Self {
        CommandHook {
            event,
            matcher: String::new(),
            spec,
            project_dir: None,
            fail_closed: false,
        }
    }

    /// Only where `matcher` applies (see [`Matcher`](crate::Matcher)). An invalid regular
    /// expression makes registration panic with the error; use
    /// [`HookSettings::add`](crate::HookSettings::add) to handle it.
    pub fn matcher(mut self, matcher: impl Into<String>) -> Self {
        self.matcher = matcher.into();
        self
    }

    /// The command's time limit (default: the event's, 10 minutes for most).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec.timeout_ms = Some(timeout.as_millis().max(1) as u64);
        self
    }

    /// The project root (default: the current directory).
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// Fails the run when the command fails (see [`CommandHooks::fail_closed`]).
    pub fn fail_closed(mut self) -> Self {
        self.fail_closed = true;
        self
    }

    /// The hook as a one-command [`CommandHooks`], to configure further.
    pub fn into_hooks(self) -> Result<CommandHooks, SettingsError> {
        let name = format!("command hook `{}`", self.spec.display());
        let mut hooks =
            CommandHooks::single(self.event, &self.matcher, self.spec, name, self.project_dir)?;
        if self.fail_closed {
            hooks = hooks.fail_closed();
        }
        Ok(hooks)
    }
}

impl IntoHook for CommandHook {
    fn into_hook(self) -> HookRegistration {
        match self.into_hooks() {
            Ok(hooks) => hooks.into_hook(),
            Err(e) => panic!("{e}"),
        }
    }
}
