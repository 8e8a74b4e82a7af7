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

mod answers;
mod spec;
mod stderr;

pub use spec::PersistentSpec;

use crate::command::process::{Finished, GroupGuard, command};
use agentry_core::awake::LOCAL_ANSWER;
use answers::{Answers, Reading, Through, Waiting};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use stderr::Tail;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::{Semaphore, oneshot};

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
                tail.closed();
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
