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
    /// A guard stopped the run at one of its limits.
    Limit {
        /// The guard (the hook's name).
        guard: String,
        /// The limit and how far the run got.
        limit: Limit,
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
    /// The run paused: these tool calls wait for a person's decision. It goes on when they are
    /// decided (`Runtime::decide` in the `agentry` crate), in any process that opens its store.
    AwaitingApproval {
        /// The calls waiting, in call order.
        pending: Vec<crate::PendingApproval>,
    },
    /// A person rejected a tool call and stopped the run.
    StoppedByHuman {
        /// The call they rejected.
        call_id: String,
        /// The reason they gave.
        reason: String,
    },
    /// The run failed and a RunFailed hook recovered it with an output.
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

    /// True when the run only paused (awaiting approval) and will go on once decided.
    pub fn is_paused(&self) -> bool {
        matches!(self, StopReason::AwaitingApproval { .. })
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::FinalAnswer => f.write_str("final answer"),
            StopReason::MaxSteps { limit } => write!(f, "step limit reached: {limit}/{limit}"),
            StopReason::Limit { limit, .. } => write!(f, "{limit}"),
            StopReason::Hook { hook, reason } => write!(f, "stopped by hook `{hook}`: {reason}"),
            StopReason::Aborted { reason } => write!(f, "model stream aborted: {reason}"),
            StopReason::Cancelled => f.write_str("cancelled"),
            StopReason::AwaitingApproval { pending } => {
                f.write_str("awaiting approval of ")?;
                for (i, p) in pending.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}`{}` ({})", p.tool, p.call_id)?;
                }
                Ok(())
            }
            StopReason::StoppedByHuman { call_id, reason } => {
                write!(f, "stopped by a person at call {call_id}: {reason}")
            }
            StopReason::Recovered { hook, error } => {
                write!(f, "recovered by hook `{hook}` from: {error}")
            }
        }
    }
}

/// A limit a guard enforces, with how far the run got when it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// Steps taken.
    Steps {
        /// Steps the run took.
        used: u32,
        /// The limit.
        limit: u32,
    },
    /// Tokens used, input and output.
    Tokens {
        /// Tokens the run used.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// Wall-clock time since the run started.
    WallTime {
        /// Milliseconds since the run started.
        elapsed_ms: u64,
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// Money spent on model calls, by the guard's price table.
    Cost {
        /// Spent, in the price table's currency.
        spent: f64,
        /// The limit.
        limit: f64,
    },
    /// The model ended a turn with a finish reason that stops the run.
    FinishReason {
        /// The finish reason.
        reason: String,
    },
}

// `f64` fields: equal limits compare equal; NaN never comes out of a price table.
impl Eq for Limit {}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Steps { used, limit } => write!(f, "step limit reached: {used}/{limit}"),
            Limit::Tokens { used, limit } => write!(f, "token limit reached: {used}/{limit}"),
            Limit::WallTime {
                elapsed_ms,
                limit_ms,
            } => write!(
                f,
                "time limit reached: {:.1} s/{:.1} s",
                *elapsed_ms as f64 / 1000.0,
                *limit_ms as f64 / 1000.0
            ),
            Limit::Cost { spent, limit } => {
                write!(f, "cost limit reached: {spent:.4}/{limit:.4}")
            }
            Limit::FinishReason { reason } => {
                write!(f, "finish reason `{reason}` stops the run")
            }
        }
    }
}
