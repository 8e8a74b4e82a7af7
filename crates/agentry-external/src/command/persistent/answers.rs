//! A persistent process's answers: its stdout, read by the events that wait, each answer line
//! handed to the event it is for.

use crate::command::process::Finished;
use serde_json::Value;
use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// The events waiting for an answer, by request id.
pub(super) type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Finished, String>>>>>;

/// The process's stdout, read by the events that wait for answers: an event waiting for its
/// answer reads what the process wrote and hands each answer to the event it is for. No task
/// of its own reads it, so an answer reaches a waiting event without a hand-off between threads.
pub(super) struct Answers {
    /// The pipe, non-blocking; registered with the runtime so that an event may sleep until it
    /// is readable.
    pub(super) pipe: pipe::Receiver,
    /// The same pipe, read directly by events that wait awake: a read through `pipe` finds
    /// nothing until the runtime has seen the pipe readable, which on a runtime of several
    /// threads means waking the one that waits for I/O.
    pub(super) direct: File,
    /// A line read in part.
    pub(super) partial: Mutex<Vec<u8>>,
    /// The longest line accepted.
    pub(super) line_limit: usize,
    /// The hook, for logs.
    pub(super) name: String,
}

/// How the pipe is read.
#[derive(Clone, Copy)]
pub(super) enum Through {
    /// Directly, whatever the runtime last saw.
    Direct,
    /// Through the runtime, which learns that the pipe is empty when it is.
    Runtime,
}

/// What reading the pipe found.
pub(super) enum Reading {
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
    pub(super) fn read(&self, waiting: &Waiting, how: Through) -> Reading {
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
