//! What a run's workflow returns, and how an activity's failure travels.

use super::*;
use crate::events::WireEvent;
use agentry_core::RunOutput;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a run decided, as the workflow returns it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum RunResult {
    /// The run ended (with an answer or another stop reason).
    Finished(Box<RunOutput<Value, Value>>),
    /// The run failed with this error.
    Failed(String),
    /// The run failed in a way that fails its parent run too (a hook's failure, the nesting
    /// limit), as in-process: hooks enforce policy, so a sub-agent cannot route around them.
    FailedWithParent(String),
    /// A sub-agent's run ended: how, and the events it recorded, which its parent records in
    /// its own stream as the in-process runtime streams them.
    Child {
        /// How it ended.
        result: Box<RunResult>,
        /// Its events.
        events: Vec<WireEvent>,
        /// The position of the first in its own list (its execution's first, for a run that
        /// continued as a new execution).
        #[serde(default)]
        from: usize,
    },
}

impl RunResult {
    /// The result without the events of a sub-agent's run.
    pub(crate) fn unwrapped(self) -> RunResult {
        match self {
            RunResult::Child { result, .. } => result.unwrapped(),
            other => other,
        }
    }
}

/// What an effect gave, with what every effect carries back to the workflow: the run's state
/// after it, the run events it sent, and the earliest deadline a hook set on the run meanwhile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Done<T> {
    /// What the effect gave.
    pub value: T,
    /// The run's state after it.
    pub state: Value,
    /// The run events it sent, in their recorded form.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while it ran (`RunContext::stop_at`),
    /// which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

impl<T> Done<T> {
    /// `value`, with the run's state as it stood and nothing else to carry: what the workflow
    /// has when it needs no activity for an effect.
    pub(crate) fn alone(value: T, state: Value) -> Self {
        Done {
            value,
            state,
            events: Vec::new(),
            deadline: None,
        }
    }
}

/// What one activity settles with: its result, or the error that fails the run (a hook's
/// failure, a model's after its retries). Recorded in history like a result, never retried.
pub(crate) type Effect<T> = Result<Done<T>, Failure>;

/// The deadline an activity's outcome carries: one a hook set during the effect, or the one
/// that interrupted it.
pub(crate) fn carried_deadline<T>(effect: &Effect<T>) -> Option<&Deadline> {
    match effect {
        Ok(done) => done.deadline.as_ref(),
        Err(failure) => failure.deadline.as_ref(),
    }
}

/// Why an effect failed the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failure {
    /// The error.
    pub error: String,
    /// A hook's failure or the nesting limit, which fail a sub-agent's parent run too.
    #[serde(default)]
    pub fails_parent: bool,
    /// Not a failure: a deadline a hook set during the effect passed, and interrupted it. The
    /// run stops with the deadline's reason.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

impl Failure {
    /// The failure `error` is.
    pub(crate) fn of(error: &agentry_core::Error) -> Self {
        Failure {
            error: error.to_string(),
            fails_parent: matches!(
                error,
                agentry_core::Error::Hook(_) | agentry_core::Error::DepthLimit { .. }
            ),
            deadline: None,
        }
    }

    /// The effect was interrupted when the deadline `deadline` passed.
    pub(crate) fn interrupted(deadline: Deadline) -> Self {
        Failure {
            error: format!("the run stopped: {}", deadline.stop),
            fails_parent: false,
            deadline: Some(deadline),
        }
    }

    /// A failure that is the run's own.
    pub(crate) fn own(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            fails_parent: false,
            deadline: None,
        }
    }
}
