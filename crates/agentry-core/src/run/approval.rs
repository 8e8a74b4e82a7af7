//! Human approval: the tool calls a run waits on, and the decisions that settle them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// A tool call that waits for a person's decision before it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The call id the model gave.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The input the tool would receive.
    pub input: Value,
    /// Why approval is needed (from the hook, the tool flag or the policy that asked).
    pub reason: String,
}

/// A person's decision on one pending call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Approve {
        /// The pending call.
        call_id: String,
    },
    /// Do not run the call; the model sees `reason` as the call's error result and goes on.
    Reject {
        /// The pending call.
        call_id: String,
        /// What the model is told.
        reason: String,
    },
    /// Do not run the call and stop the run (`StopReason::StoppedByHuman`).
    RejectAndStop {
        /// The pending call.
        call_id: String,
        /// Why the run was stopped.
        reason: String,
    },
}

impl Decision {
    /// Approves the call `call_id`.
    pub fn approve(call_id: impl Into<String>) -> Self {
        Decision::Approve {
            call_id: call_id.into(),
        }
    }
    /// Rejects the call `call_id`; the model sees `reason`.
    pub fn reject(call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Decision::Reject {
            call_id: call_id.into(),
            reason: reason.into(),
        }
    }
    /// Rejects the call `call_id` and stops the run.
    pub fn reject_and_stop(call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Decision::RejectAndStop {
            call_id: call_id.into(),
            reason: reason.into(),
        }
    }
    /// The call it decides.
    pub fn call_id(&self) -> &str {
        match self {
            Decision::Approve { call_id }
            | Decision::Reject { call_id, .. }
            | Decision::RejectAndStop { call_id, .. } => call_id,
        }
    }
    /// True for an approval.
    pub fn is_approved(&self) -> bool {
        matches!(self, Decision::Approve { .. })
    }
}

/// Why a set of decisions does not settle a paused run's pending calls ([`match_decisions`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    /// The run waits for no decision.
    #[error("the run is not waiting for a decision")]
    NotWaiting,
    /// A decision names a call that is not pending.
    #[error("it has no pending call `{call_id}`; the pending calls are {pending}")]
    UnknownCall {
        /// The call the decision names.
        call_id: String,
        /// The pending calls, as `` `tool` (call id) `` items.
        pending: String,
    },
    /// Two decisions name one call.
    #[error("call `{call_id}` is decided twice; give one decision per call")]
    DecidedTwice {
        /// The call.
        call_id: String,
    },
    /// Pending calls no decision names.
    #[error("{undecided} not decided; decide every pending call of the turn together")]
    Undecided {
        /// The undecided calls, as `` `tool` (call id) `` items.
        undecided: String,
    },
}

/// Matches `decisions` to the calls a paused run waits on: every pending call decided exactly
/// once, and nothing else; returns them by call id. Both runtimes check a person's decisions with
/// this before the run goes on.
///
/// ```
/// use agentry_core::{Decision, PendingApproval, match_decisions};
/// let pending = [PendingApproval {
///     call_id: "d1".into(),
///     tool: "delete_logs".into(),
///     input: serde_json::json!({"days": 30}),
///     reason: "destructive".into(),
/// }];
/// assert!(match_decisions(&pending, [Decision::approve("d1")]).is_ok());
/// let err = match_decisions(&pending, [Decision::approve("zz")]).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "it has no pending call `zz`; the pending calls are `delete_logs` (d1)"
/// );
/// ```
pub fn match_decisions(
    pending: &[PendingApproval],
    decisions: impl IntoIterator<Item = Decision>,
) -> Result<HashMap<String, Decision>, DecisionError> {
    if pending.is_empty() {
        return Err(DecisionError::NotWaiting);
    }
    let mut by_call = HashMap::new();
    for decision in decisions {
        let call_id = decision.call_id().to_string();
        if !pending.iter().any(|p| p.call_id == call_id) {
            return Err(DecisionError::UnknownCall {
                call_id,
                pending: call_list(pending.iter()),
            });
        }
        if by_call.contains_key(&call_id) {
            return Err(DecisionError::DecidedTwice { call_id });
        }
        by_call.insert(call_id, decision);
    }
    if by_call.len() != pending.len() {
        let undecided = pending.iter().filter(|p| !by_call.contains_key(&p.call_id));
        return Err(DecisionError::Undecided {
            undecided: call_list(undecided),
        });
    }
    Ok(by_call)
}

/// `` `tool` (call id) `` for each call, for messages.
pub fn call_list<'a>(calls: impl IntoIterator<Item = &'a PendingApproval>) -> String {
    calls
        .into_iter()
        .map(|p| format!("`{}` ({})", p.tool, p.call_id))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(ids: &[&str]) -> Vec<PendingApproval> {
        ids.iter()
            .map(|id| PendingApproval {
                call_id: id.to_string(),
                tool: "delete_logs".into(),
                input: Value::Null,
                reason: "destructive".into(),
            })
            .collect()
    }

    #[test]
    fn every_pending_call_decided_once_is_accepted_by_call() {
        let decided = match_decisions(
            &pending(&["a", "b"]),
            [Decision::reject("b", "no"), Decision::approve("a")],
        )
        .unwrap();
        assert!(decided["a"].is_approved());
        assert!(!decided["b"].is_approved());
    }

    #[test]
    fn each_bad_set_of_decisions_says_what_is_wrong() {
        let two = pending(&["a", "b"]);
        assert_eq!(
            match_decisions(&[], [Decision::approve("a")]),
            Err(DecisionError::NotWaiting)
        );
        assert_eq!(
            match_decisions(&two, [Decision::approve("z")]),
            Err(DecisionError::UnknownCall {
                call_id: "z".into(),
                pending: "`delete_logs` (a), `delete_logs` (b)".into()
            })
        );
        assert_eq!(
            match_decisions(&two, [Decision::approve("a"), Decision::approve("a")]),
            Err(DecisionError::DecidedTwice {
                call_id: "a".into()
            })
        );
        let err = match_decisions(&two, [Decision::approve("b")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`delete_logs` (a) not decided; decide every pending call of the turn together"
        );
    }
}
