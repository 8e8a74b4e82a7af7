//! Why a run stopped.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a run ended (or paused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model gave a final answer (and, for a structured output type, it validated).
    FinalAnswer,
    /// The agent's step limit was reached.
    MaxSteps {
        /// The limit.
        limit: u32,
    },
    /// A hook stopped the run (BeforeStep or AfterStep).
    Hook {
        /// The hook that stopped it.
        hook: String,
        /// The reason it gave.
        reason: String,
    },
    /// A TextDelta or Thinking hook aborted the model's stream.
    Aborted {
        /// The reason the hook gave.
        reason: String,
    },
    /// The run was cancelled.
    Cancelled,
    /// The run failed and a RunError hook recovered it with an output.
    Recovered {
        /// The hook that recovered it.
        hook: String,
        /// The error it recovered from.
        error: String,
    },
}

impl StopReason {
    /// True for the one stop a Stop hook may veto: a final answer.
    pub fn is_natural(&self) -> bool {
        matches!(self, StopReason::FinalAnswer)
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::FinalAnswer => f.write_str("final answer"),
            StopReason::MaxSteps { limit } => write!(f, "step limit reached: {limit}/{limit}"),
            StopReason::Hook { hook, reason } => write!(f, "stopped by hook `{hook}`: {reason}"),
            StopReason::Aborted { reason } => write!(f, "model stream aborted: {reason}"),
            StopReason::Cancelled => f.write_str("cancelled"),
            StopReason::Recovered { hook, error } => {
                write!(f, "recovered by hook `{hook}` from: {error}")
            }
        }
    }
}
