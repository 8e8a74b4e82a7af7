//! `Bash`: a shell command in the workspace root, in its own process group.

use crate::Workspace;
use crate::process::{Capture, GroupGuard};
use agentry_core::{StructTool, ToolCtx, ToolFailure, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// The input of [`Bash`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The shell command to run.
    pub command: String,
    /// How long it may run, in milliseconds (default 120000; capped by the tool's maximum).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// What the command does, in a few words, for people reading along.
    #[serde(default)]
    pub description: Option<String>,
}

/// How long output may stay open after the shell exited (held by something it started in the
/// background) before that is stopped.
const AFTER_EXIT: Duration = Duration::from_millis(500);

/// Runs a shell command, as Claude Code's `Bash` does: with `bash -c` when bash is installed
/// (else `/bin/sh -c`), in the workspace root, stdin empty, stdout and stderr read together.
///
/// The command runs in a process group of its own. When the shell exits, when the call's
/// timeout passes (default 2 minutes, at most the tool's maximum, 10 minutes by default) or when
/// the call's future is dropped (the run cancelled, a guard stopping it), the whole group is
/// killed: nothing the command started outlives the call. Output beyond the cap (30,000 bytes
/// by default) is cut in the middle with a marker saying how much was cut. Needs approval by
/// default.
#[derive(Clone, Debug)]
pub struct Bash {
    ws: Workspace,
    shell: PathBuf,
    timeout: Duration,
    max_timeout: Duration,
    output_cap: usize,
    approval: bool,
}

impl Bash {
    /// The default time limit of one call.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    /// The default longest time limit a call may ask for.
    pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(600);
    /// The default output cap, in bytes.
    pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

    /// `Bash` running in `workspace`'s root, with the default limits; each call needs approval.
    pub fn new(workspace: &Workspace) -> Self {
        Bash {
            ws: workspace.clone(),
            shell: default_shell(),
            timeout: Self::DEFAULT_TIMEOUT,
            max_timeout: Self::DEFAULT_MAX_TIMEOUT,
            output_cap: Self::DEFAULT_OUTPUT_CAP,
            approval: true,
        }
    }

    /// The time limit of a call that gives no `timeout`. A limit above the maximum raises the
    /// maximum to it.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit.max(Duration::from_millis(1));
        self.max_timeout = self.max_timeout.max(self.timeout);
        self
    }

    /// The longest time limit a call may ask for: a longer request gets this one. A maximum
    /// below the default time limit lowers that limit to it.
    pub fn max_timeout(mut self, limit: Duration) -> Self {
        self.max_timeout = limit.max(Duration::from_millis(1));
        self.timeout = self.timeout.min(self.max_timeout);
        self
    }

    /// The most bytes of output the model sees (stdout and stderr together); the middle of
    /// longer output is cut.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes.max(2);
        self
    }

    /// The shell run with `-c` (default: `bash` when installed, else `/bin/sh`).
    pub fn shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }

    /// Whether each call waits for a person's approval (default: yes).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }

    /// Runs `command` with the time limit `limit`.
    async fn execute(&self, command: &str, limit: Duration) -> Result<ToolOutput, ToolFailure> {
        let start_failed = |e: std::io::Error| {
            ToolFailure::new(format!(
                "could not start the shell `{}`: {e}",
                self.shell.display()
            ))
        };
        let (reader, writer) = std::io::pipe().map_err(start_failed)?;
        let mut child = {
            // The command holds the pipe's writing ends: it goes out of scope once spawned, so
            // the output ends when the command's processes close theirs.
            let mut cmd = tokio::process::Command::new(&self.shell);
            cmd.arg("-c")
                .arg(command)
                .current_dir(self.ws.root())
                .stdin(Stdio::null())
                .stdout(writer.try_clone().map_err(start_failed)?)
                .stderr(writer)
                .process_group(0)
                .kill_on_drop(true);
            cmd.spawn().map_err(start_failed)?
        };
        let mut group = GroupGuard::new(child.id());
        let mut output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
            .map_err(|e| ToolFailure::new(format!("could not read the command's output: {e}")))?;
        let mut capture = Capture::new(self.output_cap);
        let mut held_open = false;
        let work = async {
            let mut buf = vec![0u8; 16 * 1024];
            let mut read_all = false;
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    read = output.read(&mut buf), if !read_all => match read {
                        Ok(0) | Err(_) => read_all = true,
                        Ok(n) => capture.push(&buf[..n]),
                    },
                }
            };
            // The shell exited: its output closes at once unless something it started holds it.
            let drain = async {
                while !read_all {
                    match output.read(&mut buf).await {
                        Ok(0) | Err(_) => read_all = true,
                        Ok(n) => capture.push(&buf[..n]),
                    }
                }
            };
            if tokio::time::timeout(AFTER_EXIT, drain).await.is_err() {
                held_open = true;
            }
            status
        };
        let status = tokio::time::timeout(limit, work).await;
        // Whatever happened, nothing the command started goes on running.
        group.kill();
        let status = match status {
            Ok(status) => status
                .map_err(|e| ToolFailure::new(format!("waiting for the command failed: {e}")))?,
            Err(_) => {
                let _ = child.wait().await;
                return Err(ToolFailure::new(format!(
                    "the command timed out after {} ms; it and every process it started were killed. Give a larger `timeout` (at most {} ms), or make the command faster. Output until then:\n{}",
                    limit.as_millis(),
                    self.max_timeout.as_millis(),
                    or_none(capture.text())
                )));
            }
        };
        let mut text = or_none(capture.text());
        if held_open {
            text.push_str(
                "\n[processes it started in the background kept its output open; they were stopped]",
            );
        }
        use std::os::unix::process::ExitStatusExt;
        if let Some(code) = status.code().filter(|c| *c != 0) {
            text.push_str(&format!("\n[exit code: {code}]"));
        } else if let Some(signal) = status.signal() {
            text.push_str(&format!("\n[killed by signal {signal}]"));
        }
        Ok(ToolOutput::text(text))
    }
}

/// `text`, or a note that there was none.
fn or_none(text: String) -> String {
    if text.is_empty() {
        "(no output)".to_string()
    } else {
        text
    }
}

/// `bash` when installed, else `/bin/sh`.
fn default_shell() -> PathBuf {
    ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .unwrap_or(Path::new("/bin/sh"))
        .to_path_buf()
}

impl StructTool for Bash {
    type Input = BashInput;
    type Output = ToolOutput;
    const NAME: &'static str = "Bash";
    const DESCRIPTION: &'static str = "Runs a shell command in the workspace root and returns its \
        output (stdout and stderr together) and its exit code when it is not 0. Each call starts a \
        new shell: `cd` and variables do not carry over. Long output is cut in the middle; send it \
        to a file and Read or Grep it. The command and everything it starts are stopped when it \
        ends, when its `timeout` (milliseconds) passes, or when the call is cancelled, so nothing \
        keeps running in the background.";

    async fn run(&self, input: BashInput, _ctx: ToolCtx) -> Result<ToolOutput, ToolFailure> {
        if input.command.trim().is_empty() {
            return Err(ToolFailure::new(
                "`command` is empty; give the shell command to run",
            ));
        }
        let limit = input
            .timeout
            .map(Duration::from_millis)
            .unwrap_or(self.timeout)
            .clamp(Duration::from_millis(1), self.max_timeout);
        self.execute(&input.command, limit).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }

    /// The longest a call may ask for, and a little more: the call's own limit fires first.
    fn timeout(&self) -> Option<Duration> {
        Some(self.max_timeout + AFTER_EXIT + Duration::from_secs(5))
    }
}
