//! What starts a persistent hook process, and how many events it may hold at once.

use crate::command::CommandSpec;
use crate::handler::{as_seconds, seconds};
use serde::{Deserialize, Serialize};

/// A persistent hook process (`"type": "persistent"` in settings): the command to start, how
/// long an event may wait for its answer, and how many events may be in flight at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PersistentSpec {
    /// The command line (shell form), or the program (exec form).
    pub command: String,
    /// The arguments: present for exec form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The longest one event may wait for its answer, in milliseconds (`timeout` in seconds in
    /// settings); `None` for the event's default.
    #[serde(
        default,
        rename = "timeout",
        deserialize_with = "seconds",
        serialize_with = "as_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<u64>,
    /// Events sent and not yet answered, at most (default 64); more wait for a slot within their
    /// timeout.
    #[serde(default = "default_in_flight", rename = "maxInFlight")]
    pub max_in_flight: usize,
    /// The shell a shell-form command starts in, as for a command hook
    /// ([`CommandSpec::shell`](crate::CommandSpec#structfield.shell)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
}

fn default_in_flight() -> usize {
    64
}

impl PersistentSpec {
    /// A shell-form persistent process.
    pub fn shell(command: impl Into<String>) -> Self {
        PersistentSpec {
            command: command.into(),
            args: None,
            timeout_ms: None,
            max_in_flight: default_in_flight(),
            shell: None,
        }
    }

    /// The command that starts the process.
    pub(crate) fn command_spec(&self) -> CommandSpec {
        CommandSpec {
            args: self.args.clone(),
            shell: self.shell.clone(),
            ..CommandSpec::shell(&self.command)
        }
    }

    /// How errors name it.
    pub fn display(&self) -> String {
        self.command_spec().display()
    }
}
