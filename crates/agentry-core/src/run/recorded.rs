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
