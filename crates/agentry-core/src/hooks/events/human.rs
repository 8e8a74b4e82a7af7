//! The payloads of the `human` event group: ApprovalRequested, ApprovalResolved, StoppedByHuman.

use super::{Decides, form};
use crate::{Decision, PendingApproval};
use serde::Serialize;

/// A tool call needs approval. A hook may decide it at once (an auto-approver for read-only
/// tools, a policy that rejects outside office hours); otherwise the run pauses with the call
/// pending until a person decides.
#[derive(Clone, Debug, Serialize)]
pub struct ApprovalRequested {
    /// The call, its input and why approval is needed.
    #[serde(flatten, serialize_with = "form::pending")]
    pending: PendingApproval,
    #[serde(skip)]
    decision: Option<Decision>,
    #[serde(skip)]
    marks: u32,
}
impl ApprovalRequested {
    /// The call, its input and why approval is needed.
    pub fn pending(&self) -> &PendingApproval {
        &self.pending
    }
}
impl ApprovalRequested {
    /// A new event.
    pub fn new(pending: PendingApproval) -> Self {
        ApprovalRequested {
            pending,
            decision: None,
            marks: 0,
        }
    }
    /// Approves the call: it runs now.
    pub fn approve(&mut self) {
        self.decision = Some(Decision::approve(&self.pending.call_id));
        self.marks += 1;
    }
    /// Rejects the call; the model sees `reason` as its error result.
    pub fn reject(&mut self, reason: impl Into<String>) {
        self.decision = Some(Decision::reject(&self.pending.call_id, reason));
        self.marks += 1;
    }
    /// Rejects the call and stops the run.
    pub fn reject_and_stop(&mut self, reason: impl Into<String>) {
        self.decision = Some(Decision::reject_and_stop(&self.pending.call_id, reason));
        self.marks += 1;
    }
    /// The decision, if a hook took one.
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }
}
impl Decides for ApprovalRequested {
    fn decided(&self) -> bool {
        self.decision.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// Who decided an approval: as JSON, `"person"` or `{"hook": "<name>"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolver {
    /// A person, through `Runtime::decide`.
    Person,
    /// An ApprovalRequested hook, by name.
    Hook(String),
}

/// An approval was decided. Observe it (audit logs).
#[derive(Clone, Debug, Serialize)]
pub struct ApprovalResolved {
    /// The call that was pending.
    #[serde(flatten, serialize_with = "form::decided_call")]
    pending: PendingApproval,
    /// The decision.
    decision: Decision,
    /// Who decided.
    by: Resolver,
}
impl ApprovalResolved {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(pending: PendingApproval, decision: Decision, by: Resolver) -> Self {
        ApprovalResolved {
            pending,
            decision,
            by,
        }
    }
    /// The call that was pending.
    pub fn pending(&self) -> &PendingApproval {
        &self.pending
    }
    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }
    /// Who decided.
    pub fn by(&self) -> &Resolver {
        &self.by
    }
}
impl Decides for ApprovalResolved {}

/// A person (or a hook) rejected a call and stopped the run.
#[derive(Clone, Debug, Serialize)]
pub struct StoppedByHuman {
    /// The call they rejected.
    #[serde(rename = "tool_use_id")]
    call_id: String,
    /// Their reason.
    reason: String,
    /// Who stopped it.
    by: Resolver,
}
impl StoppedByHuman {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(call_id: String, reason: String, by: Resolver) -> Self {
        StoppedByHuman {
            call_id,
            reason,
            by,
        }
    }
    /// The call they rejected.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
    /// Their reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }
    /// Who stopped it.
    pub fn by(&self) -> &Resolver {
        &self.by
    }
}
impl Decides for StoppedByHuman {}
