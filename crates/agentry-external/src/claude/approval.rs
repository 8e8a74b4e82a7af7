//! Notification and PermissionRequest: a tool call that needs approval, as Claude Code's hooks
//! see it; a PermissionRequest answer approves or rejects it.

use super::EventName;
use super::fields::APPROVAL;
use super::tools::tool_name;
use crate::hooks::Engine;
use agentry_core::hooks::{ApprovalRequested, HookCtx, HookResult};
use serde_json::json;

impl Engine {
    /// Notification (`permission_prompt`), then PermissionRequest, matched against the tool's
    /// Claude Code name: allow approves the call; deny rejects it (and stops the run with
    /// `interrupt`).
    pub(crate) async fn permission_request(
        &self,
        mut ev: ApprovalRequested,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalRequested> {
        let site = self.claude.site(ctx);
        let fields = self.claude_fields(&ev, &APPROVAL);
        let name = tool_name(&fields);
        if self.has(EventName::Notification) {
            let message = format!("agentry needs your permission to use {name}");
            self.fire(
                EventName::Notification,
                Some("permission_prompt"),
                &site,
                |m| {
                    m.insert("message".into(), json!(message));
                    m.insert("title".into(), json!("Permission needed"));
                    m.insert("notification_type".into(), json!("permission_prompt"));
                },
            )
            .await?;
        }
        if self.has(EventName::PermissionRequest) {
            let merged = self
                .fire(EventName::PermissionRequest, Some(&name), &site, |m| {
                    m.extend(fields);
                    m.insert("permission_suggestions".into(), json!([]));
                })
                .await?;
            if let Some(decision) = merged.permission_request {
                if decision.allow {
                    ev.approve();
                } else {
                    let message = decision.message.unwrap_or_else(|| {
                        format!("{name} was denied by a PermissionRequest hook")
                    });
                    if decision.interrupt {
                        ev.reject_and_stop(message);
                    } else {
                        ev.reject(message);
                    }
                }
            }
        }
        Ok(ev)
    }
}
