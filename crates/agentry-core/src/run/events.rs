//! The events a started run streams to its observer.

use crate::{Message, StateSource, StopReason, ToolResult};
use serde_json::Value;
use std::sync::Arc;

/// One event of a run's event stream (`RunHandle::events` in the `agentry` crate).
///
/// Events of sub-agents arrive on their parent's stream, tagged with their `agent_path`
/// (`parent/child`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum RunEvent {
    /// A run (or sub-agent run) started.
    RunStarted {
        /// The run id.
        run_id: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A step started.
    StepStarted {
        /// The step number (1-based).
        step: u32,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A step ended.
    StepFinished {
        /// The step number.
        step: u32,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// Streamed text.
    TextDelta {
        /// The piece of text.
        text: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// Streamed reasoning.
    ThinkingDelta {
        /// The piece of reasoning.
        text: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A tool call starts, after BeforeTool hooks: `input` is what they left (what the tool
    /// receives unless a hook blocked, mocked or held the call); for a call that goes no further
    /// (an unknown tool, arguments that are not JSON, as a string), the model's input.
    ToolStarted {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The input after BeforeTool hooks.
        input: Value,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A tool call settled (after AfterTool or ToolError hooks).
    ToolFinished {
        /// The result the model will see.
        result: ToolResult,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// The state changed; `patch` (RFC 6902) turns the previous state into the new one.
    StatePatch {
        /// The JSON Patch.
        patch: json_patch::Patch,
        /// Who changed it.
        source: StateSource,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A message was added to the history.
    Message {
        /// The message.
        message: Arc<Message>,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// The history was compacted: `removed` older messages were replaced by one message.
    Compacted {
        /// How many messages were folded.
        removed: usize,
        /// `summarize` or `window`.
        strategy: &'static str,
        /// The text that replaced them.
        summary: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A custom event emitted by a tool or hook.
    Custom {
        /// The event name.
        name: String,
        /// Its data.
        data: Value,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A hook decided something about what the run does: blocked, mocked or held a tool call
    /// for approval, or rewrote its input. Streamed only (a run without an event stream compares
    /// nothing).
    HookDecision {
        /// The hook whose decision stands; for a rewrite, the hooks that changed the input, in
        /// the order they ran, joined with `, `.
        hook: String,
        /// The event it decided on (`BeforeTool`).
        event: &'static str,
        /// What it did: `blocked`, `mocked`, `asked for approval`, `rewrote the input`.
        decision: String,
        /// What it decided about: the tool call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The reason, the mock's content or the new input, as text.
        detail: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// The run paused: these calls wait for a person's decision.
    AwaitingApproval {
        /// The calls waiting, in call order.
        pending: Vec<crate::PendingApproval>,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// A pending call was decided.
    ApprovalResolved {
        /// The decision (it names the call).
        decision: crate::Decision,
        /// Who decided: `person`, or the deciding hook's name.
        by: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// The run ended.
    RunFinished {
        /// The run id.
        run_id: String,
        /// Why it ended.
        stop: StopReason,
        /// The agent path.
        agent_path: Arc<str>,
    },
    /// The run failed.
    RunFailed {
        /// The run id.
        run_id: String,
        /// The error, as text.
        error: String,
        /// The agent path.
        agent_path: Arc<str>,
    },
}

impl RunEvent {
    /// The agent path of the run that produced the event.
    pub fn agent_path(&self) -> &str {
        match self {
            RunEvent::RunStarted { agent_path, .. }
            | RunEvent::StepStarted { agent_path, .. }
            | RunEvent::StepFinished { agent_path, .. }
            | RunEvent::TextDelta { agent_path, .. }
            | RunEvent::ThinkingDelta { agent_path, .. }
            | RunEvent::ToolStarted { agent_path, .. }
            | RunEvent::ToolFinished { agent_path, .. }
            | RunEvent::StatePatch { agent_path, .. }
            | RunEvent::Message { agent_path, .. }
            | RunEvent::Compacted { agent_path, .. }
            | RunEvent::AwaitingApproval { agent_path, .. }
            | RunEvent::HookDecision { agent_path, .. }
            | RunEvent::ApprovalResolved { agent_path, .. }
            | RunEvent::Custom { agent_path, .. }
            | RunEvent::RunFinished { agent_path, .. }
            | RunEvent::RunFailed { agent_path, .. } => agent_path,
        }
    }
}

impl RunEvent {
    /// The event's kind, as its history records it (`run_started`, `tool_finished`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::StepStarted { .. } => "step_started",
            RunEvent::StepFinished { .. } => "step_finished",
            RunEvent::TextDelta { .. } => "text_delta",
            RunEvent::ThinkingDelta { .. } => "thinking_delta",
            RunEvent::ToolStarted { .. } => "tool_started",
            RunEvent::ToolFinished { .. } => "tool_finished",
            RunEvent::StatePatch { .. } => "state_patch",
            RunEvent::Message { .. } => "message",
            RunEvent::Compacted { .. } => "compacted",
            RunEvent::Custom { .. } => "custom",
            RunEvent::AwaitingApproval { .. } => "awaiting_approval",
            RunEvent::HookDecision { .. } => "hook_decision",
            RunEvent::ApprovalResolved { .. } => "approval_resolved",
            RunEvent::RunFinished { .. } => "run_finished",
            RunEvent::RunFailed { .. } => "run_failed",
        }
    }

    /// The event as its history records it, now; `None` for streamed text and reasoning
    /// pieces, which the complete turn's `message` event holds whole.
    pub fn to_recorded(&self) -> Option<crate::RecordedEvent> {
        use serde_json::json;
        let data = match self {
            RunEvent::TextDelta { .. } | RunEvent::ThinkingDelta { .. } => return None,
            RunEvent::RunStarted { run_id, agent_path } => {
                json!({"run_id": run_id, "agent_path": agent_path})
            }
            RunEvent::StepStarted { step, .. } | RunEvent::StepFinished { step, .. } => {
                json!({"step": step})
            }
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                ..
            } => json!({"call_id": call_id, "name": name, "input": input}),
            RunEvent::ToolFinished { result, .. } => json!({"result": result}),
            RunEvent::StatePatch { patch, source, .. } => {
                json!({"patch": patch, "source": source})
            }
            RunEvent::Message { message, .. } => json!({"message": message}),
            RunEvent::Compacted {
                removed,
                strategy,
                summary,
                ..
            } => json!({"removed": removed, "strategy": strategy, "summary": summary}),
            RunEvent::Custom { name, data, .. } => json!({"name": name, "data": data}),
            RunEvent::AwaitingApproval { pending, .. } => json!({"pending": pending}),
            RunEvent::HookDecision {
                hook,
                event,
                decision,
                call_id,
                tool,
                detail,
                ..
            } => {
                json!({"hook": hook, "event": event, "decision": decision, "call_id": call_id, "tool": tool, "detail": detail})
            }
            RunEvent::ApprovalResolved { decision, by, .. } => {
                json!({"decision": decision, "by": by})
            }
            RunEvent::RunFinished { stop, .. } => json!({"stop": stop}),
            RunEvent::RunFailed { error, .. } => json!({"error": error}),
        };
        Some(crate::RecordedEvent::now(self.kind(), data))
    }
}
