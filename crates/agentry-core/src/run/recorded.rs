//! A run event as it is recorded: its kind and data, and when it happened.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// One event of a run, as the runtime records it for the store ([`RunEvent::to_recorded`](crate::RunEvent::to_recorded)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// When it happened, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Its kind (`run_started`, `tool_finished`, ...).
    pub kind: String,
    /// Its data.
    pub data: Value,
}

impl RecordedEvent {
    /// An event of `kind` with `data`, happening now.
    pub fn now(kind: impl Into<String>, data: Value) -> Self {
        RecordedEvent {
            at_ms: now_ms(),
            kind: kind.into(),
            data,
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The events a run records for its store's history until its next checkpoint takes them.
///
/// A sub-agent's run records into its own history and into each enclosing run's, so a run's
/// stored history holds its sub-agents' events where they happened (each tagged with its agent
/// path), whether it is read live or long after. Cheap to clone (one `Arc`); runtimes get one
/// from [`RunEngine::history`](crate::RunEngine::history) to nest a child run's in it.
#[derive(Clone, Default)]
pub struct RecordedHistory(std::sync::Arc<HistoryNode>);

#[derive(Default)]
struct HistoryNode {
    events: std::sync::Mutex<Vec<RecordedEvent>>,
    enclosing: Option<RecordedHistory>,
}

impl std::fmt::Debug for RecordedHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedHistory")
            .field("held", &self.lock().len())
            .field("nested", &self.0.enclosing.is_some())
            .finish()
    }
}

impl RecordedHistory {
    /// A history of a run of its own (nested in none).
    pub fn new() -> Self {
        RecordedHistory::default()
    }

    /// A history nested in `enclosing`: what it records, `enclosing` (and what encloses that)
    /// records too.
    pub fn nested_in(enclosing: RecordedHistory) -> Self {
        RecordedHistory(std::sync::Arc::new(HistoryNode {
            events: std::sync::Mutex::default(),
            enclosing: Some(enclosing),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedEvent>> {
        self.0.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `event` here and in every enclosing history, outermost first, and returns the
    /// outermost one's lock still held: whoever sends the event on while holding it sends in
    /// the order that history records (a stream numbered by its order stays in step).
    pub(crate) fn record(
        &self,
        event: RecordedEvent,
    ) -> std::sync::MutexGuard<'_, Vec<RecordedEvent>> {
        match &self.0.enclosing {
            None => {
                let mut held = self.lock();
                held.push(event);
                held
            }
            Some(enclosing) => {
                let outermost = enclosing.record(event.clone());
                self.lock().push(event);
                outermost
            }
        }
    }

    /// Takes what was recorded since the last call, oldest first.
    pub(crate) fn take(&self) -> Vec<RecordedEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// Puts back `events` (taken, not saved) before any recorded since.
    pub(crate) fn restore(&self, mut events: Vec<RecordedEvent>) {
        if events.is_empty() {
            return;
        }
        let mut held = self.lock();
        events.append(&mut held);
        *held = events;
    }

    /// True when something was recorded since the last [`take`](Self::take).
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}
