//! Stdio servers: the child process (in a process group of its own, killed with it), its
//! stderr tail, and a JSON-RPC transport over its stdin and stdout that reports output that is
//! not JSON-RPC instead of skipping it.

use crate::config::ServerSpec;
use crate::error::McpError;
use crate::template::resolve;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
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
}

impl Diagnostics {
    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().map(|l| format!("  {l}\n")).collect()
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
/// [`kill`](Self::kill)ed; the child is reaped, so no zombie is left.
pub(crate) struct ProcessGroup {
    pgid: Option<i32>,
    child: Mutex<Option<Child>>,
}

impl ProcessGroup {
    /// Kills every process of the group and reaps the child.
    pub(crate) fn kill(&self) {
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut child) = child else { return };
        if let Some(pgid) = self.pgid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = child.start_kill();
        // Reaped: on the runtime when there is one, else tokio's orphan reaping (kill_on_drop).
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = child.wait().await;
            });
        }
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
        });
    }
    let group = Arc::new(ProcessGroup {
        pgid: child.id().map(|p| p as i32),
        child: Mutex::new(Some(child)),
    });
    let transport = StdioTransport {
        stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
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
                    "it wrote a message of more than {} bytes on stdout",
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
