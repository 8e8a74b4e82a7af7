//! The end of what a persistent process wrote on stderr: what explains it when it dies.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// The last bytes a process wrote on stderr, for errors when it dies, and whether its stderr
/// closed (all of it read).
pub(super) struct Tail(Mutex<VecDeque<u8>>, tokio::sync::watch::Sender<bool>);

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
    pub(super) async fn text_at_end(&self) -> String {
        let mut closed = self.1.subscribe();
        let _ = tokio::time::timeout(STDERR_GRACE, closed.wait_for(|c| *c)).await;
        self.text()
    }
    /// Keeps `bytes`, and drops what no longer fits.
    pub(super) fn push(&self, bytes: &[u8]) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.extend(bytes);
        let over = t.len().saturating_sub(TAIL);
        t.drain(..over);
    }
    /// The text kept so far, trimmed.
    pub(super) fn text(&self) -> String {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = t.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }
    /// Notes that the process's stderr closed: all of it was read.
    pub(super) fn closed(&self) {
        self.1.send_replace(true);
    }
}
