//! Stdio servers: the child process (in a process group of its own, killed with it), its
//! stderr tail, and a JSON-RPC transport over its stdin and stdout that reports output that is
//! not JSON-RPC instead of skipping it.

use crate::config::{DEFAULT_INHERITED_ENV, ServerSpec};
use crate::error::McpError;
use crate::template::resolve;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How many stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;
/// How long one kept stderr line may be.
const STDERR_LINE_CHARS: usize = 500;

/// What is known about a connection's health: the server's stderr tail, and the protocol fault
/// that ended it, if one did.
#[derive(Default)]
pub(crate) struct Diagnostics {
    stderr: Mutex<VecDeque<String>>,
    fault: Mutex<Option<String>>,
    /// Set when the server's stderr reached its end.
    stderr_closed: tokio::sync::Notify,
    stderr_done: AtomicBool,
}

impl Diagnostics {
    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().map(|l| format!("  {l}\n")).collect()
    }

    /// Waits up to `within` for the server's stderr to end (a server that exited has said
    /// everything it will), so its tail is complete.
    pub(crate) async fn stderr_settled(&self, within: Duration) {
        let closed = self.stderr_closed.notified();
        if self.stderr_done.load(Ordering::Acquire) {
            return;
        }
        let _ = tokio::time::timeout(within, closed).await;
    }

    fn close_stderr(&self) {
        self.stderr_done.store(true, Ordering::Release);
        self.stderr_closed.notify_waiters();
    }

    /// The protocol fault that ended the connection, if one did.
    pub(crate) fn fault(&self) -> Option<String> {
        self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_fault(&self, fault: String) {
        let mut slot = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            tracing::warn!(%fault, "MCP server broke the protocol");
            *slot = Some(fault);
        }
    }

    fn push_stderr(&self, line: &str) {
        let mut line = line.trim_end().to_string();
        if line.len() > STDERR_LINE_CHARS {
            let mut cut = STDERR_LINE_CHARS;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        let mut lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

/// A server's process group: killed (every process in it) when this is dropped or
/// [`kill`](Self::kill)ed; the child is reaped, so no zombie is left, and how it ended is kept
/// for error messages.
pub(crate) struct ProcessGroup {
    pgid: Option<i32>,
    child: Mutex<Option<Child>>,
    /// Its exit status, once it is known.
    status: Arc<Mutex<Option<ExitStatus>>>,
    /// True once this side sent SIGKILL (so a death by SIGKILL is not the server's own doing).
    killed: AtomicBool,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
}

impl ProcessGroup {
    /// Kills every process of the group and reaps the child.
    pub(crate) fn kill(&self) {
        self.exited();
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut child) = child else { return };
        self.killed.store(true, Ordering::Release);
        self.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = child.start_kill();
        // Reaped: on the runtime when there is one, else tokio's orphan reaping (kill_on_drop).
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let status = self.status.clone();
            handle.spawn(async move {
                if let Ok(s) = child.wait().await {
                    status
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(s);
                }
            });
        }
    }

    /// Ends the server the way the MCP specification asks: its stdin is closed, it is given
    /// `grace` to exit, then SIGTERM and `grace` again, then SIGKILL for whatever of its group
    /// is left.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        drop(self.stdin.lock().await.take());
        if self.wait_exit(grace).await.is_none() {
            self.signal(nix::sys::signal::Signal::SIGTERM);
            self.wait_exit(grace).await;
        }
        self.kill();
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        if let Some(pgid) = self.pgid {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
        }
    }

    /// Its exit status, when it has exited (reaping it).
    fn exited(&self) -> Option<ExitStatus> {
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        if status.is_none()
            && let Some(child) = self
                .child
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            && let Ok(Some(s)) = child.try_wait()
        {
            *status = Some(s);
        }
        *status
    }

    /// Waits up to `within` for it to exit; its exit status when it did.
    pub(crate) async fn wait_exit(&self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// How the server's process ended, in words (`it exited with status 3`, `it was killed by
    /// signal 11 (SIGSEGV)`), after waiting up to `within` for it to end; `None` while it runs
    /// or when it was killed from this side.
    pub(crate) async fn how_it_ended(&self, within: Duration) -> Option<String> {
        let status = self.wait_exit(within).await?;
        if let Some(code) = status.code() {
            return Some(format!("it exited with status {code}"));
        }
        let signal = status.signal()?;
        let ours = self.killed.load(Ordering::Acquire)
            && signal == nix::sys::signal::Signal::SIGKILL as i32;
        if ours {
            return None;
        }
        let name = nix::sys::signal::Signal::try_from(signal)
            .map(|s| format!(" ({})", s.as_str()))
            .unwrap_or_default();
        Some(format!("it was killed by signal {signal}{name}"))
    }

    /// The child's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid.map(|p| p as u32)
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts a stdio server: its `${VAR}` templates resolved, in a process group of its own.
pub(crate) fn spawn(
    server: &str,
    spec: &ServerSpec,
    diagnostics: &Arc<Diagnostics>,
) -> Result<(StdioTransport, Arc<ProcessGroup>), McpError> {
    let command = spec.command.as_deref().unwrap_or_default();
    let command = resolve(command, server, "command")?;
    let mut cmd = tokio::process::Command::new(&command);
    // Only a few variables of agentry's environment (no provider key, no token), the ones the
    // spec names, then its own.
    cmd.env_clear();
    let inherited = DEFAULT_INHERITED_ENV
        .iter()
        .copied()
        .chain(spec.inherit_env.iter().map(String::as_str));
    for name in inherited {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    for (i, arg) in spec.args.iter().enumerate() {
        cmd.arg(resolve(arg, server, &format!("argument {}", i + 1))?);
    }
    for (key, value) in &spec.env {
        cmd.env(key, resolve(value, server, &format!("env {key}"))?);
    }
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(resolve(cwd, server, "cwd")?);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| McpError::Start {
        server: server.to_string(),
        message: format!(
            "`{command}` could not be run: {e}; check the `command` and that it is installed"
        ),
        stderr: String::new(),
    })?;
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    if let Some(stderr) = child.stderr.take() {
        let diagnostics = diagnostics.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                diagnostics.push_stderr(&line);
            }
            diagnostics.close_stderr();
        });
    }
    let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
    let group = Arc::new(ProcessGroup {
        pgid: child.id().map(|p| p as i32),
        child: Mutex::new(Some(child)),
        status: Arc::default(),
        killed: AtomicBool::new(false),
        stdin: stdin.clone(),
    });
    let transport = StdioTransport {
        stdin,
        stdout: BufReader::with_capacity(64 << 10, stdout),
        line: Vec::new(),
        // Far above the result cap, whose error is clearer (it names the tool).
        max_line: spec.result_cap().saturating_mul(16).max(64 << 20),
        diagnostics: diagnostics.clone(),
        group: group.clone(),
    };
    Ok((transport, group))
}

/// JSON-RPC over a child's stdin and stdout, one message a line. Output that is not JSON-RPC,
/// or a line over the size limit, ends the connection with the fault recorded for the error
/// the caller gets (never silently skipped).
pub(crate) struct StdioTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stdout: BufReader<ChildStdout>,
    /// The line being read (kept across cancelled reads).
    line: Vec<u8>,
    max_line: usize,
    diagnostics: Arc<Diagnostics>,
    group: Arc<ProcessGroup>,
}

impl StdioTransport {
    /// Reads the next whole line into `self.line` (without its newline); false at the end of
    /// the stream or on a fault. Cancel-safe: a partial line stays in `self.line`.
    async fn read_line(&mut self) -> bool {
        loop {
            let available = match self.stdout.fill_buf().await {
                Ok(bytes) => bytes,
                Err(e) => {
                    self.diagnostics
                        .set_fault(format!("its stdout could not be read: {e}"));
                    return false;
                }
            };
            if available.is_empty() {
                return false;
            }
            if let Some(end) = available.iter().position(|b| *b == b'\n') {
                self.line.extend_from_slice(&available[..end]);
                self.stdout.consume(end + 1);
                return true;
            }
            let len = available.len();
            self.line.extend_from_slice(available);
            self.stdout.consume(len);
            if self.line.len() > self.max_line {
                self.diagnostics.set_fault(format!(
                    "it wrote a message of more than {} bytes on stdout, the limit on one message (16 times the server's `maxResultBytes`, at least 64 MiB)",
                    self.max_line
                ));
                return false;
            }
        }
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let line = serde_json::to_vec(&item).map(|mut v| {
            v.push(b'\n');
            v
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let mut stdin = stdin.lock().await;
            let Some(writer) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if !self.read_line().await {
                return None;
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line);
            if text.iter().all(u8::is_ascii_whitespace) {
                self.line = line;
                self.line.clear();
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text) {
                Ok(message) => {
                    self.line = line;
                    self.line.clear();
                    return Some(message);
                }
                Err(e) => {
                    // A notification of a method this client does not know is ignored, as the
                    // protocol allows; anything else is a fault.
                    let value = serde_json::from_slice::<serde_json::Value>(text).ok();
                    let unknown_notification = value.as_ref().is_some_and(|v| {
                        v.get("id").is_none() && v.get("method").is_some_and(|m| m.is_string())
                    });
                    if unknown_notification {
                        self.line = line;
                        self.line.clear();
                        continue;
                    }
                    let shown = String::from_utf8_lossy(&text[..text.len().min(200)]);
                    let what = if value.is_some() {
                        format!("a JSON message that is not valid JSON-RPC ({e})")
                    } else {
                        "output that is not JSON-RPC".to_string()
                    };
                    self.diagnostics
                        .set_fault(format!("it wrote {what} on stdout: `{shown}`"));
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.stdin.lock().await.take());
        self.group.kill();
        Ok(())
    }
}
