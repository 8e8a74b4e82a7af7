//! What a call streams: ToolStarted, the hooks' decisions on it, ToolFinished.

use super::ToolCalls;
use agentry_core::hooks::{EventKind, HookName, ToolDecision};
use agentry_core::{RunEvent, ToolCall, ToolResult};
use serde_json::Value;

impl ToolCalls<'_> {
    /// Streams the start of a call, with the input the tool receives (after BeforeTool hooks), or
    /// the one the model sent when the call goes no further.
    pub(super) fn tool_started(&self, call: &ToolCall, input: &Value) {
        self.scope.engine.send_event(|p| RunEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            input: input.clone(),
            agent_path: p.clone(),
            run_id: None,
        });
    }

    /// Streams what BeforeTool hooks decided about a call, when they decided or rewrote
    /// anything.
    pub(super) fn hook_decision(
        &self,
        call: &ToolCall,
        by: Option<HookName>,
        rewriters: String,
        decision: Option<&ToolDecision>,
        asked: &Value,
        input: &Value,
    ) {
        let (what, detail) = match decision {
            Some(ToolDecision::Block(reason)) => ("blocked", reason.clone()),
            Some(ToolDecision::Mock(content)) => ("mocked", content.describe().into_owned()),
            Some(ToolDecision::NeedsApproval(reason)) => ("asked for approval", reason.clone()),
            None if asked != input => ("rewrote the input", input.to_string()),
            None => return,
        };
        let hook = match (by, decision) {
            (Some(by), Some(_)) => by.to_string(),
            _ => rewriters,
        };
        self.scope.engine.send_event(|p| RunEvent::HookDecision {
            hook,
            event: EventKind::BeforeTool,
            decision: what.to_owned(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            detail,
            agent_path: p.clone(),
            run_id: None,
        });
    }

    /// Streams that a BeforeTool hook allowed a call (it runs without the approval the tool
    /// itself wants), with the hook's reason.
    pub(super) fn hook_allowed(&self, call: &ToolCall, hook: String, reason: String) {
        self.scope.engine.send_event(|p| RunEvent::HookDecision {
            hook,
            event: EventKind::BeforeTool,
            decision: "allowed".to_owned(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            detail: reason,
            agent_path: p.clone(),
            run_id: None,
        });
    }

    pub(super) fn tool_finished(&self, result: &ToolResult) {
        self.scope.engine.send_event(|p| RunEvent::ToolFinished {
            result: result.clone(),
            agent_path: p.clone(),
            run_id: None,
        });
    }
}
