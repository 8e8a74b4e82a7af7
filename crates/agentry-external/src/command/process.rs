//! Running one command: in its own process group, with the payload on stdin, its output read
//! within limits, and the whole group killed when it overruns its time or is abandoned.

use super::spec::{CommandSpec, Shell};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// How much of a command's output is kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutputLimits {
    /// Stdout beyond this fails the command: its decision would be cut.
    pub(crate) stdout: usize,
    /// Stderr beyond this is read and dropped.
    pub(crate) stderr: usize,
}

/// How long readers may go on after the command exited (a background process it started may
/// hold its output open): then the group is killed and what was read is used.
const AFTER_EXIT: Duration = Duration::from_secs(1);

/// What one command run produced.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// The signal that ended it, if one did.
    pub(crate) signal: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) duration: Duration,
}

/// Why a command produced no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunFailure {
    #[error("could not be started: {0}")]
    Spawn(io::Error),
    #[error(
        "could not be started: it runs in PowerShell (`shell: \"powershell\"`), and `{0}` was not found; install PowerShell 7 (`pwsh` on PATH), or name its program in AGENTRY_POWERSHELL"
    )]
    NoPowerShell(String),
    #[error("timed out after {0:?} (the hook's timeout); its process group was killed")]
    Timeout(Duration),
    #[error(
        "printed more than {0} bytes on stdout, the limit on a hook's output (`CommandHooks::output_limits`); its process group was killed"
    )]
    StdoutTooLarge(usize),
    #[error("reading its output failed: {0}")]
    Io(io::Error),
}

/// One command to run.
pub(crate) struct Invocation<'a> {
    pub(crate) spec: &'a CommandSpec,
    pub(crate) stdin: Arc<[u8]>,
    pub(crate) cwd: &'a Path,
    /// Variables set for the command (and substituted into exec-form arguments).
    pub(crate) env: &'a [(String, String)],
    pub(crate) timeout: Duration,
    pub(crate) limits: OutputLimits,
}

/// Kills a process group when dropped, unless disarmed: a command abandoned half-way (the run
/// cancelled, its timeout passed) leaves nothing running.
pub(crate) struct GroupGuard(Option<Pid>);

impl GroupGuard {
    /// Guards the process group led by the process `pid`.
    pub(crate) fn new(pid: Option<u32>) -> Self {
        GroupGuard(pid.map(|pid| Pid::from_raw(pid as i32)))
    }

    /// Kills the group now (once).
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // The group may be gone already; nothing else to do then.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The PowerShell program: `AGENTRY_POWERSHELL`, else the first of `pwsh` and `powershell` on
/// `PATH` (`pwsh` when neither is, which then fails to start with [`RunFailure::Spawn`]).
fn powershell() -> std::ffi::OsString {
    if let Some(program) = std::env::var_os("AGENTRY_POWERSHELL").filter(|p| !p.is_empty()) {
        return program;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["pwsh", "powershell"] {
        if std::env::split_paths(&path).any(|dir| dir.join(name).is_file()) {
            return name.into();
        }
    }
    "pwsh".into()
}

/// Replaces `${NAME}` for the variables of `env` in exec-form text.
fn substitute(text: &str, env: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in env {
        if name.starts_with("CLAUDE_") {
            out = out.replace(&format!("${{{name}}}"), value);
        }
    }
    out
}

/// The command `spec` describes, run in `cwd` with `env`, its stdio piped, in a process group
/// of its own, killed if dropped.
pub(crate) fn command(spec: &CommandSpec, cwd: &Path, env: &[(String, String)]) -> Command {
    let mut cmd = match &spec.args {
        None => match spec.shell_kind() {
            Ok(Shell::PowerShell) => {
                let mut c = Command::new(powershell());
                c.args(["-NoProfile", "-NonInteractive", "-Command"])
                    .arg(&spec.command);
                c
            }
            Ok(Shell::Bash) => {
                let mut c = Command::new("bash");
                c.arg("-c").arg(&spec.command);
                c
            }
            // A shell no spec can name once registered (checked then) runs nowhere else.
            Ok(Shell::Sh) | Err(_) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c").arg(&spec.command);
                c
            }
        },
        Some(args) => {
            let mut c = Command::new(substitute(&spec.command, env));
            c.args(args.iter().map(|a| substitute(a, env)));
            c
        }
    };
    // Hooks run without the tracing exporters' settings of the host, as in Claude Code.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// Reads `from` to its end, keeping at most `keep` bytes; returns them and whether more came.
/// With `stop_when_over`, gives up as soon as more than `keep` came.
async fn read_capped(
    mut from: impl AsyncRead + Unpin,
    keep: usize,
    stop_when_over: bool,
) -> io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut over = false;
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, over));
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        over |= n > room;
        if over && stop_when_over {
            return Ok((kept, over));
        }
    }
}

/// Why reading a command's output stopped short.
enum ReadError {
    Io(io::Error),
    StdoutTooLarge,
}

/// Runs one command to its end, its time limit, or until the returned future is dropped.
pub(crate) async fn run(inv: Invocation<'_>) -> Result<Finished, RunFailure> {
    let started = Instant::now();
    let mut child = command(inv.spec, inv.cwd, inv.env).spawn().map_err(|e| {
        match (e.kind(), inv.spec.shell_kind()) {
            (io::ErrorKind::NotFound, Ok(Shell::PowerShell)) => {
                RunFailure::NoPowerShell(powershell().to_string_lossy().into_owned())
            }
            _ => RunFailure::Spawn(e),
        }
    })?;
    let mut guard = GroupGuard::new(child.id());
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let payload = inv.stdin.clone();
    let limits = inv.limits;
    // Written beside the reads: a command that never reads stdin must not hold up its output,
    // and a closed pipe (EPIPE) is not an error.
    let write = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
        }
        Ok::<(), ReadError>(())
    };
    let read_out = async move {
        match read_capped(stdout, limits.stdout, true).await {
            Ok((_, true)) => Err(ReadError::StdoutTooLarge),
            Ok((bytes, false)) => Ok(bytes),
            Err(e) => Err(ReadError::Io(e)),
        }
    };
    let read_err = async move {
        read_capped(stderr, limits.stderr, false)
            .await
            .map_err(ReadError::Io)
    };
    let outputs = async { tokio::try_join!(read_out, read_err, write) };
    let work = async {
        let outputs = outputs;
        tokio::pin!(outputs);
        let status = tokio::select! {
            status = child.wait() => status,
            read = &mut outputs => {
                if read.is_err() {
                    return (None, Some(read));
                }
                return (Some(child.wait().await), Some(read));
            }
        };
        // Exited: its output should close at once, unless something it started holds it.
        match tokio::time::timeout(AFTER_EXIT, &mut outputs).await {
            Ok(read) => (Some(status), Some(read)),
            Err(_) => (Some(status), None),
        }
    };
    let Ok((status, read)) = tokio::time::timeout(inv.timeout, work).await else {
        guard.kill();
        let _ = child.wait().await;
        return Err(RunFailure::Timeout(inv.timeout));
    };
    let (stdout, (stderr, stderr_over), ()) = match read {
        Some(Ok(outputs)) => outputs,
        Some(Err(ReadError::StdoutTooLarge)) => {
            guard.kill();
            let _ = child.wait().await;
            return Err(RunFailure::StdoutTooLarge(limits.stdout));
        }
        Some(Err(ReadError::Io(e))) => {
            guard.kill();
            let _ = child.wait().await;
            return Err(RunFailure::Io(e));
        }
        None => {
            // Output held open past the command's exit: end the stragglers, keep nothing partial.
            guard.kill();
            return Err(RunFailure::Io(io::Error::other(
                "it exited but a process it started kept its output open; its process group was killed",
            )));
        }
    };
    let status = status
        .expect("the status is known once the output was read")
        .map_err(RunFailure::Io)?;
    // Finished normally: processes it left in the background are its own business.
    guard.0 = None;
    let mut stderr = String::from_utf8_lossy(&stderr).into_owned();
    if stderr_over {
        stderr.push_str("\n[stderr truncated]");
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(Finished {
        code: status.code(),
        signal: status.signal(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr,
        duration: started.elapsed(),
    })
}
