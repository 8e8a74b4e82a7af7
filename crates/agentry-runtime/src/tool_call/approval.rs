//! A call that needs a person's decision: ApprovalRequested, the decision, ApprovalResolved.

use super::ToolCalls;
use super::{Settled, rejected};
use agentry_core::hooks::{ApprovalRequested, ApprovalResolved, Events, Resolver};
use agentry_core::{Decision, Error, PendingApproval, RunEvent, ToolCall};
use serde_json::Value;

impl ToolCalls<'_> {
    /// Streams and records a decision on a pending call.
    pub(crate) fn approval_resolved(&self, decision: &Decision, by: &Resolver) {
        self.scope
            .engine
            .send_event(|p| RunEvent::ApprovalResolved {
                decision: decision.clone(),
                by: match by {
                    Resolver::Person => "person".to_string(),
                    Resolver::Hook(name) => name.clone(),
                },
                agent_path: p.clone(),
                run_id: None,
            });
    }

    /// Asks for approval of a call: an ApprovalRequested hook may decide at once; otherwise the
    /// call is pending. `None` means approved: run it.
    pub(super) async fn ask_approval(
        &self,
        call: &ToolCall,
        input: &Value,
        reason: String,
    ) -> Result<Option<Settled>, Error> {
        let pending = PendingApproval {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            input: input.clone(),
            reason,
        };
        if !self.scope.wants(Events::APPROVAL_REQUESTED) {
            return Ok(Some(Settled::Pending(pending)));
        }
        let (ev, by) = self
            .scope
            .hook_decided(ApprovalRequested::new(pending))
            .await?;
        let Some(decision) = ev.decision().cloned() else {
            return Ok(Some(Settled::Pending(ev.pending().clone())));
        };
        let by = Resolver::Hook(by.as_deref().unwrap_or_default().to_string());
        self.approval_resolved(&decision, &by);
        if self.scope.wants(Events::APPROVAL_RESOLVED) {
            let resolved =
                ApprovalResolved::new(ev.pending().clone(), decision.clone(), by.clone());
            self.scope.hook(resolved).await?;
        }
        Ok(match decision {
            Decision::Approve { .. } => None,
            Decision::Reject { reason, .. } => Some(Settled::Done(rejected(call, &reason))),
            Decision::RejectAndStop { reason, .. } => Some(Settled::Stop {
                result: rejected(call, &reason),
                reason,
                by,
            }),
        })
    }
}
