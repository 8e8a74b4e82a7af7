//! Human approval: the tool calls a run waits on, and the decisions that settle them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
