//! What a command hook runs: its command line, its form (shell or exec) and its time limit.

use crate::handler::{as_seconds, seconds};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One command handler, as Claude Code's settings declare it
/// (`{"type": "command", "command": ..., "args": [...], "timeout": N}`).
///
/// Without `args`, `command` is a shell command line run by `/bin/sh -c` (dash on Debian and
/// Ubuntu, as Claude Code does: bash-only syntax needs `bash -c '…'` or a script with a `#!`
/// line). With `args`, the command is run directly (exec form): no shell, and
/// `${CLAUDE_PROJECT_DIR}`, `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}` are replaced as
/// text in the command and each argument.
///
/// Serializable: a run stores its external hooks as data with its checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CommandSpec {
    /// The command line (shell form), or the program (exec form).
    pub command: String,
    /// The arguments: present for exec form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The longest the command may run, in milliseconds (settings give seconds in `timeout`);
    /// `None` for the event's default.
    #[serde(
        default,
        rename = "timeout",
        deserialize_with = "seconds",
        serialize_with = "as_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<u64>,
    /// The shell a shell-form command runs in (see [`Shell`]): `"bash"` runs it with `bash -c`,
    /// `"powershell"` with PowerShell (`pwsh -NoProfile -NonInteractive -Command`); unset, with
    /// `/bin/sh -c`. Another name is an error when the hook is registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// Runs in the background: the run does not wait, and its decisions have no effect.
    #[serde(default, rename = "async", skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// Claude Code's `if`: one permission-rule pattern (`Bash(git *)`, `Edit(*.ts)`); the
    /// command runs only for tool calls it applies to, and never on other events.
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Spinner text in Claude Code; kept, unused.
    #[serde(
        default,
        rename = "statusMessage",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
}

impl CommandSpec {
    /// A shell-form command.
    pub fn shell(command: impl Into<String>) -> Self {
        CommandSpec {
            command: command.into(),
            args: None,
            timeout_ms: None,
            shell: None,
            background: false,
            condition: None,
            status_message: None,
        }
    }

    /// An exec-form command: `program` run directly with `args`.
    pub fn exec(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        CommandSpec {
            args: Some(args.into_iter().map(Into::into).collect()),
            ..CommandSpec::shell(program)
        }
    }

    /// The shell its command line runs in, or why its `shell` names none.
    pub fn shell_kind(&self) -> Result<Shell, String> {
        match self.shell.as_deref() {
            None | Some("sh") => Ok(Shell::Sh),
            Some("bash") => Ok(Shell::Bash),
            Some("powershell" | "pwsh") => Ok(Shell::PowerShell),
            Some(other) => Err(format!(
                "`{other}` is not a shell hooks run in: use `bash` or `powershell` (or leave it out for /bin/sh)"
            )),
        }
    }

    /// The time limit, if the spec sets one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// How errors and events name this command: its command line.
    pub fn display(&self) -> String {
        match &self.args {
            None => self.command.clone(),
            Some(args) => {
                let mut line = self.command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
        }
    }
}

/// The shell a shell-form command ([`CommandSpec`] without `args`) runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// `/bin/sh -c` (dash on Debian and Ubuntu), as Claude Code runs hooks on Linux.
    Sh,
    /// `bash -c`.
    Bash,
    /// PowerShell: `pwsh -NoProfile -NonInteractive -Command`, with the program named by
    /// `AGENTRY_POWERSHELL`, else the first of `pwsh` (PowerShell 7) and `powershell` on `PATH`.
    PowerShell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_claude_code_handler_fields_and_ignores_others() {
        let spec: CommandSpec = serde_json::from_value(json!({
            "command": "python3 x.py", "timeout": 5, "rewakeMessage": "ignored", "async": false
        }))
        .unwrap();
        assert_eq!(spec.command, "python3 x.py");
        assert_eq!(spec.timeout(), Some(Duration::from_secs(5)));
        let half: CommandSpec =
            serde_json::from_value(json!({"command": "x", "timeout": 0.5})).unwrap();
        assert_eq!(half.timeout(), Some(Duration::from_millis(500)));
        assert!(
            serde_json::from_value::<CommandSpec>(json!({"command": "x", "timeout": -1})).is_err()
        );
    }

    #[test]
    fn round_trips_as_settings_data() {
        let spec = CommandSpec {
            timeout_ms: Some(30_000),
            ..CommandSpec::exec("node", ["${CLAUDE_PROJECT_DIR}/hook.js"])
        };
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            json,
            json!({"command": "node", "args": ["${CLAUDE_PROJECT_DIR}/hook.js"], "timeout": 30})
        );
        assert_eq!(serde_json::from_value::<CommandSpec>(json).unwrap(), spec);
    }
}
