//! Persistent hook processes: one long-lived process answers every event, as JSON lines over its
//! stdin and stdout, many at a time.
//!
//! # The line protocol
//! agentry writes one line per event: `{"id": 7, "input": {...}}`, where `input` is exactly what
//! a command hook gets on stdin. The process answers each id once, in any order, with one line:
//! - `{"id": 7}`: no decision;
//! - `{"id": 7, "output": {...}}`: the JSON a command prints on exit 0 (`"output": "text"` is plain
//!   stdout);
//! - `{"id": 7, "block": "reason"}`: what exit 2 with `reason` on stderr does;
//! - `{"id": 7, "error": "message"}`: a non-blocking error, reported as HookFailed.
//!
//! The process starts on the first event, runs in the project root, and is restarted with backoff
//! when it dies: the events it had not answered fail as its hooks' policy says (never a hang), and
//! while it waits to restart, events fail at once. It is killed with its process group when the
//! hooks are dropped (with the runtime they are registered on).

use crate::process::{Finished, GroupGuard, command};
use crate::spec::{CommandSpec, as_seconds, seconds};
use agentry_core::awake::LOCAL_ANSWER;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::{Semaphore, oneshot};

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

/// The last bytes a process wrote on stderr, for errors when it dies, and whether its stderr
/// closed (all of it read).
struct Tail(Mutex<VecDeque<u8>>, tokio::sync::watch::Sender<bool>);

impl Default for Tail {
    fn default() -> Self {
        Tail(Mutex::default(), tokio::sync::watch::Sender::new(false))
    }
}

const TAIL: usize = 2048;

/// How long an error about a process that stopped answering waits for the rest of its stderr.
const STDERR_GRACE: Duration = Duration::from_millis(200);

impl Tail {
    /// The text, once the process's stderr closed (or [`STDERR_GRACE`] passed): a process that
    /// dies closes its stdout and its stderr together, and what it wrote last explains it.
    async fn text_at_end(&self) -> String {
        let mut closed = self.1.subscribe();
        let _ = tokio::time::timeout(STDERR_GRACE, closed.wait_for(|c| *c)).await;
        self.text()
    }
    fn push(&self, bytes: &[u8]) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.extend(bytes);
        let over = t.len().saturating_sub(TAIL);
        t.drain(..over);
    }
    fn text(&self) -> String {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = t.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Finished, String>>>>>;

/// One running process.
struct Conn {
    stdin: tokio::sync::Mutex<ChildStdin>,
    answers: Answers,
    waiting: Waiting,
    alive: Arc<AtomicBool>,
    stderr: Arc<Tail>,
    started: Instant,
    // Dropped last: kills the process group.
    _group: GroupGuard,
}

/// The process's stdout, read by the events that wait for answers: an event waiting for its
/// answer reads what the process wrote and hands each answer to the event it is for. No task
/// of its own reads it, so an answer reaches a waiting event without a hand-off between threads.
struct Answers {
    /// The pipe, non-blocking; registered with the runtime so that an event may sleep until it
    /// is readable.
    pipe: pipe::Receiver,
    /// The same pipe, read directly by events that wait awake: a read through `pipe` finds
    /// nothing until the runtime has seen the pipe readable, which on a runtime of several
    /// threads means waking the one that waits for I/O.
    direct: File,
    /// A line read in part.
    partial: Mutex<Vec<u8>>,
    /// The longest line accepted.
    line_limit: usize,
    /// The hook, for logs.
    name: String,
}

/// How the pipe is read.
#[derive(Clone, Copy)]
enum Through {
    /// Directly, whatever the runtime last saw.
    Direct,
    /// Through the runtime, which learns that the pipe is empty when it is.
    Runtime,
}

/// What reading the pipe found.
enum Reading {
    /// It was emptied (it would block).
    Drained,
    /// It closed, or broke the protocol: the process is taken for dead.
    Ended,
}

impl Answers {
    fn partial(&self) -> MutexGuard<'_, Vec<u8>> {
        self.partial.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads whatever the process wrote, without waiting, and hands each complete answer to
    /// the event it is for.
    fn read(&self, waiting: &Waiting, how: Through) -> Reading {
        let mut partial = self.partial();
        let mut buf = [0u8; 8192];
        loop {
            let read = match how {
                Through::Runtime => self.pipe.try_read(&mut buf),
                Through::Direct => (&self.direct).read(&mut buf),
            };
            match read {
                Ok(0) => return Reading::Ended,
                Ok(n) => {
                    partial.extend_from_slice(&buf[..n]);
                    let mut start = 0;
                    while let Some(end) = partial[start..].iter().position(|&b| b == b'\n') {
                        let line = String::from_utf8_lossy(&partial[start..start + end]);
                        if !line.trim().is_empty() {
                            answer(&self.name, &line, waiting);
                        }
                        start += end + 1;
                    }
                    partial.drain(..start);
                    if partial.len() > self.line_limit {
                        tracing::warn!(hook = %self.name, limit = self.line_limit, "a persistent hook process wrote a line longer than agentry reads; it is stopped");
                        return Reading::Ended;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Reading::Drained,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!(hook = %self.name, error = %e, "reading a persistent hook process's answers failed; it is stopped");
                    return Reading::Ended;
                }
            }
        }
    }
}

enum State {
    Idle,
    Up(Arc<Conn>),
    Down { retry_at: Instant, why: String },
}

/// A persistent process and its connection, shared by every event its hooks handle.
pub(crate) struct Persistent {
    spec: PersistentSpec,
    state: tokio::sync::Mutex<State>,
    slots: Semaphore,
    next_id: AtomicU64,
    /// Quick deaths (and failed starts) in a row.
    deaths: AtomicU32,
}

/// The wait before a restart after `deaths` quick deaths in a row: none after the first, then
/// 100 ms, doubling, at most 30 s.
fn backoff(deaths: u32) -> Duration {
    match deaths {
        0 | 1 => Duration::ZERO,
        n => Duration::from_millis(100)
            .saturating_mul(1 << (n - 2).min(9))
            .min(Duration::from_secs(30)),
    }
}

impl Persistent {
    pub(crate) fn new(spec: PersistentSpec) -> Self {
        Persistent {
            slots: Semaphore::new(spec.max_in_flight.max(1)),
            spec,
            state: tokio::sync::Mutex::new(State::Idle),
            next_id: AtomicU64::new(1),
            deaths: AtomicU32::new(0),
        }
    }

    /// The running process, started (or restarted, once its backoff has passed) if need be.
    async fn connection(
        &self,
        cwd: &Path,
        env: &(dyn Fn() -> Vec<(String, String)> + Sync),
        line_limit: usize,
    ) -> Result<Arc<Conn>, String> {
        let mut state = self.state.lock().await;
        if let State::Up(conn) = &*state {
            if conn.alive.load(Ordering::Acquire) {
                return Ok(conn.clone());
            }
            // It died since the last event. A process that lived a while starts the count of
            // quick deaths again; each quick death in a row doubles the wait before a restart.
            let deaths = if conn.started.elapsed() < Duration::from_secs(10) {
                self.deaths.fetch_add(1, Ordering::Relaxed) + 1
            } else {
                self.deaths.store(1, Ordering::Relaxed);
                1
            };
            let why = match conn.stderr.text() {
                t if t.is_empty() => "the persistent hook process exited".to_string(),
                t => format!("the persistent hook process exited; its stderr ended with: {t}"),
            };
            *state = State::Down {
                retry_at: Instant::now() + backoff(deaths),
                why,
            };
        }
        if let State::Down { retry_at, why } = &*state
            && Instant::now() < *retry_at
        {
            return Err(format!(
                "{why}; it is restarted in {:?}",
                retry_at.saturating_duration_since(Instant::now())
            ));
        }
        match self.start(cwd, &env(), line_limit) {
            Ok(conn) => {
                let conn = Arc::new(conn);
                *state = State::Up(conn.clone());
                Ok(conn)
            }
            Err(e) => {
                let deaths = self.deaths.fetch_add(1, Ordering::Relaxed) + 1;
                let why = format!("the persistent hook process could not be started: {e}");
                *state = State::Down {
                    retry_at: Instant::now() + backoff(deaths),
                    why: why.clone(),
                };
                Err(why)
            }
        }
    }

    fn start(
        &self,
        cwd: &Path,
        env: &[(String, String)],
        line_limit: usize,
    ) -> std::io::Result<Conn> {
        let mut child = command(&self.spec.command_spec(), cwd, env).spawn()?;
        let group = GroupGuard::new(child.id());
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let waiting: Waiting = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        let tail = Arc::new(Tail::default());
        // The runtime set the pipe non-blocking; the events read it (see `Answers`).
        let answers = Answers {
            direct: File::from(stdout.as_fd().try_clone_to_owned()?),
            pipe: pipe::Receiver::from_owned_fd(stdout.into_owned_fd()?)?,
            partial: Mutex::default(),
            line_limit,
            name: self.spec.display(),
        };
        {
            // A process that exits between events is restarted before the next one.
            let alive = alive.clone();
            tokio::spawn(async move {
                let _ = child.wait().await;
                alive.store(false, Ordering::Release);
            });
        }
        {
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buf[..n]);
                }
                tail.1.send_replace(true);
            });
        }
        Ok(Conn {
            stdin: tokio::sync::Mutex::new(stdin),
            answers,
            waiting,
            alive,
            stderr: tail,
            started: Instant::now(),
            _group: group,
        })
    }

    /// Sends one event and waits for its answer, at most `timeout` (a slot included).
    /// `env` gives the variables the process starts with; it is called only when the process
    /// (re)starts.
    pub(crate) async fn request(
        &self,
        payload: &[u8],
        cwd: &Path,
        env: &(dyn Fn() -> Vec<(String, String)> + Sync),
        timeout: Duration,
        line_limit: usize,
    ) -> Result<Finished, String> {
        let started = Instant::now();
        let work = async {
            let _slot = self.slots.acquire().await.map_err(|e| e.to_string())?;
            let conn = self.connection(cwd, env, line_limit).await?;
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            conn.waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, tx);
            let input = std::str::from_utf8(payload)
                .expect("payloads are JSON text")
                .trim_end();
            let line = format!("{{\"id\":{id},\"input\":{input}}}\n");
            let written = {
                let mut stdin = conn.stdin.lock().await;
                match stdin.write_all(line.as_bytes()).await {
                    Ok(()) => stdin.flush().await,
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = written {
                conn.waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                conn.alive.store(false, Ordering::Release);
                return Err(format!("the persistent hook process is gone ({e})"));
            }
            let guard = Forget { conn: &conn, id };
            let answer = conn.answer(rx).await;
            std::mem::forget(guard);
            answer
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok(mut done)) => {
                done.duration = started.elapsed();
                Ok(done)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!("no answer within {timeout:?} (the hook's timeout)")),
        }
    }
}

impl Conn {
    /// Waits for the answer `rx` stands for, reading the process's answers meanwhile: awake for
    /// [`LOCAL_ANSWER`] (reading the pipe directly, and yielding to the runtime every few reads,
    /// much as [`awake_for`](agentry_core::awake::awake_for) does), then asleep until the pipe
    /// is readable or another event handed the answer over.
    async fn answer(
        &self,
        mut rx: oneshot::Receiver<Result<Finished, String>>,
    ) -> Result<Finished, String> {
        let gone = || Err("the persistent hook process exited before answering".to_string());
        let until = Instant::now() + LOCAL_ANSWER;
        for round in 0u32.. {
            match rx.try_recv() {
                Ok(answer) => return answer,
                Err(oneshot::error::TryRecvError::Closed) => return gone(),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if Instant::now() >= until {
                break;
            }
            if let Reading::Ended = self.answers.read(&self.waiting, Through::Direct) {
                self.ended().await;
            }
            if let Ok(answer) = rx.try_recv() {
                return answer;
            }
            // Yielding to the runtime lets the thread's other tasks run, but on a runtime of
            // several threads each yield may wake another to look for work: only every few reads.
            if round % 8 == 7 {
                tokio::task::yield_now().await;
            } else {
                std::hint::spin_loop();
            }
        }
        loop {
            tokio::select! {
                biased;
                answer = &mut rx => return answer.unwrap_or_else(|_| gone()),
                ready = self.answers.pipe.readable() => {
                    // Reading clears the readiness once it finds the pipe empty.
                    if ready.is_err() || matches!(
                        self.answers.read(&self.waiting, Through::Runtime),
                        Reading::Ended
                    ) {
                        self.ended().await;
                    }
                }
            }
        }
    }

    /// The process closed its answers or broke the protocol: it is taken for dead, and the
    /// events waiting fail (their hooks' policy decides what that means).
    async fn ended(&self) {
        self.alive.store(false, Ordering::Release);
        let why = match self.stderr.text_at_end().await {
            t if t.is_empty() => "the persistent hook process exited before answering".to_string(),
            t => format!(
                "the persistent hook process exited before answering; its stderr ended with: {t}"
            ),
        };
        for (_, tx) in self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
        {
            let _ = tx.send(Err(why.clone()));
        }
    }
}

/// Forgets a request whose caller stopped waiting (its timeout, or the run cancelled), so a late
/// answer is dropped.
struct Forget<'a> {
    conn: &'a Conn,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.conn
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// Routes one answer line to the event waiting for it.
fn answer(name: &str, line: &str, waiting: &Waiting) {
    let parsed: Result<Value, _> = serde_json::from_str(line);
    let Some(obj) = parsed.ok().and_then(|v| match v {
        Value::Object(o) => Some(o),
        _ => None,
    }) else {
        tracing::warn!(hook = %name, line = %line.chars().take(200).collect::<String>(), "a persistent hook process wrote a line that is not a JSON object; ignored");
        return;
    };
    let Some(id) = obj.get("id").and_then(Value::as_u64) else {
        tracing::warn!(hook = %name, "a persistent hook process answered without a numeric `id`; ignored");
        return;
    };
    let Some(tx) = waiting
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id)
    else {
        tracing::debug!(hook = %name, id, "an answer came for an event no longer waiting");
        return;
    };
    let done = |code: i32, stdout: String, stderr: String| Finished {
        code: Some(code),
        signal: None,
        stdout,
        stderr,
        duration: Duration::ZERO,
    };
    let reply = if let Some(e) = obj.get("error") {
        Err(match e {
            Value::String(s) => format!("answered with an error: {s}"),
            other => format!("answered with an error: {other}"),
        })
    } else if let Some(reason) = obj.get("block") {
        let reason = match reason {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Ok(done(2, String::new(), reason))
    } else {
        match obj.get("output") {
            None | Some(Value::Null) => Ok(done(0, String::new(), String::new())),
            Some(Value::String(text)) => Ok(done(0, text.clone(), String::new())),
            Some(other) => Ok(done(0, other.to_string(), String::new())),
        }
    };
    let _ = tx.send(reply);
}
