//! Deadlines carried back by activities, and the run's finish.

use super::*;
use agentry_core::StopReason;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A deadline set on a run (`RunContext::stop_at`): when, in milliseconds since the Unix
/// epoch, and the stop it brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Deadline {
    /// When it passes, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The run's stop reason then.
    pub stop: StopReason,
}

impl Deadline {
    /// The deadline `at`, bringing `stop`.
    pub(crate) fn new(at: std::time::SystemTime, stop: StopReason) -> Self {
        let at_ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Deadline { at_ms, stop }
    }

    /// When it passes.
    pub(crate) fn at(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + Duration::from_millis(self.at_ms)
    }

    /// The earlier of `current` and `next` (the earliest deadline stands, as in-process).
    pub(crate) fn earliest(current: Option<Deadline>, next: Option<Deadline>) -> Option<Deadline> {
        match (current, next) {
            (Some(a), Some(b)) => Some(if b.at_ms < a.at_ms { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// How a run ends, for its last activity.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Ending {
    /// It stopped.
    Stopped {
        /// Why.
        stop: StopReason,
        /// The output.
        output: Option<Value>,
    },
    /// It failed (RunFailed hooks may recover).
    Failed(String),
}

/// The end of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FinishInput {
    /// The run.
    pub run: RunView,
    /// The first message MessageAdded hooks have not seen.
    pub report_from: usize,
    /// A stop reason Stop hooks have not seen yet.
    pub stop_event: Option<StopReason>,
    /// How it ends.
    pub ending: Ending,
    /// True when the run only pauses (it waits for a person) and goes on afterwards: its
    /// worker keeps what it has of the run.
    #[serde(default)]
    pub paused: bool,
}

/// How a run ended after its last hooks (its final state is the [`Done`]'s).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Finish {
    /// Why it stopped.
    pub stop: StopReason,
    /// The output.
    pub output: Option<Value>,
}
