//! A run's events as its history records them: activities return the events their effects
//! sent, the workflow adds the events of the run's course, and a client reads them back with a
//! query ([`RunHandle::events`](crate::RunHandle::events)).
//!
//! Streamed pieces of text and reasoning (`TextDelta`, `ThinkingDelta`) are not recorded: each
//! would be an entry in the run's history, and the turn's `Message` holds them whole.

use agentry_core::{
    Decision, Message, PendingApproval, RunEvent, StateSource, StopReason, ToolResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A [`RunEvent`] as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum WireEvent {
    RunStarted {
        run_id: String,
        agent_path: String,
    },
    StepStarted {
        step: u32,
        agent_path: String,
    },
    StepFinished {
        step: u32,
        agent_path: String,
    },
    ToolStarted {
        call_id: String,
        name: String,
        input: Value,
        agent_path: String,
    },
    ToolFinished {
        result: ToolResult,
        agent_path: String,
    },
    StatePatch {
        patch: json_patch::Patch,
        source: StateSource,
        agent_path: String,
    },
    Message {
        message: Message,
        agent_path: String,
    },
    Custom {
        name: String,
        data: Value,
        agent_path: String,
    },
    HookDecision {
        hook: String,
        event: String,
        decision: String,
        call_id: String,
        tool: String,
        detail: String,
        agent_path: String,
    },
    AwaitingApproval {
        pending: Vec<PendingApproval>,
        agent_path: String,
    },
    ApprovalResolved {
        decision: Decision,
        by: String,
        agent_path: String,
    },
    RunFinished {
        run_id: String,
        stop: StopReason,
        agent_path: String,
    },
    RunFailed {
        run_id: String,
        error: String,
        agent_path: String,
    },
}

impl WireEvent {
    /// The recorded form of `event`; `None` for what is not recorded (streamed pieces, and
    /// compactions, which runs on Temporal do not do).
    pub fn of(event: RunEvent) -> Option<WireEvent> {
        let path = |p: Arc<str>| p.to_string();
        Some(match event {
            RunEvent::RunStarted { run_id, agent_path } => WireEvent::RunStarted {
                run_id,
                agent_path: path(agent_path),
            },
            RunEvent::StepStarted { step, agent_path } => WireEvent::StepStarted {
                step,
                agent_path: path(agent_path),
            },
            RunEvent::StepFinished { step, agent_path } => WireEvent::StepFinished {
                step,
                agent_path: path(agent_path),
            },
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                agent_path,
            } => WireEvent::ToolStarted {
                call_id,
                name,
                input,
                agent_path: path(agent_path),
            },
            RunEvent::ToolFinished { result, agent_path } => WireEvent::ToolFinished {
                result,
                agent_path: path(agent_path),
            },
            RunEvent::StatePatch {
                patch,
                source,
                agent_path,
            } => WireEvent::StatePatch {
                patch,
                source,
                agent_path: path(agent_path),
            },
            RunEvent::Message {
                message,
                agent_path,
            } => WireEvent::Message {
                message: Arc::unwrap_or_clone(message),
                agent_path: path(agent_path),
            },
            RunEvent::Custom {
                name,
                data,
                agent_path,
            } => WireEvent::Custom {
                name,
                data,
                agent_path: path(agent_path),
            },
            RunEvent::HookDecision {
                hook,
                event,
                decision,
                call_id,
                tool,
                detail,
                agent_path,
            } => WireEvent::HookDecision {
                hook,
                event: event.to_string(),
                decision,
                call_id,
                tool,
                detail,
                agent_path: path(agent_path),
            },
            RunEvent::AwaitingApproval {
                pending,
                agent_path,
            } => WireEvent::AwaitingApproval {
                pending,
                agent_path: path(agent_path),
            },
            RunEvent::ApprovalResolved {
                decision,
                by,
                agent_path,
            } => WireEvent::ApprovalResolved {
                decision,
                by,
                agent_path: path(agent_path),
            },
            RunEvent::RunFinished {
                run_id,
                stop,
                agent_path,
            } => WireEvent::RunFinished {
                run_id,
                stop,
                agent_path: path(agent_path),
            },
            RunEvent::RunFailed {
                run_id,
                error,
                agent_path,
            } => WireEvent::RunFailed {
                run_id,
                error,
                agent_path: path(agent_path),
            },
            _ => return None,
        })
    }

    /// True for run `run_id`'s last event: it finished or failed (a sub-agent's end, under
    /// another run id, is not).
    pub fn ends(&self, run_id: &str) -> bool {
        matches!(
            self,
            WireEvent::RunFinished { run_id: id, .. } | WireEvent::RunFailed { run_id: id, .. }
                if id == run_id
        )
    }

    /// The event as the in-process runtime sends it.
    pub fn into_event(self) -> RunEvent {
        let path = |p: String| Arc::<str>::from(p);
        match self {
            WireEvent::RunStarted { run_id, agent_path } => RunEvent::RunStarted {
                run_id,
                agent_path: path(agent_path),
            },
            WireEvent::StepStarted { step, agent_path } => RunEvent::StepStarted {
                step,
                agent_path: path(agent_path),
            },
            WireEvent::StepFinished { step, agent_path } => RunEvent::StepFinished {
                step,
                agent_path: path(agent_path),
            },
            WireEvent::ToolStarted {
                call_id,
                name,
                input,
                agent_path,
            } => RunEvent::ToolStarted {
                call_id,
                name,
                input,
                agent_path: path(agent_path),
            },
            WireEvent::ToolFinished { result, agent_path } => RunEvent::ToolFinished {
                result,
                agent_path: path(agent_path),
            },
            WireEvent::StatePatch {
                patch,
                source,
                agent_path,
            } => RunEvent::StatePatch {
                patch,
                source,
                agent_path: path(agent_path),
            },
            WireEvent::Message {
                message,
                agent_path,
            } => RunEvent::Message {
                message: Arc::new(message),
                agent_path: path(agent_path),
            },
            WireEvent::Custom {
                name,
                data,
                agent_path,
            } => RunEvent::Custom {
                name,
                data,
                agent_path: path(agent_path),
            },
            WireEvent::HookDecision {
                hook,
                event,
                decision,
                call_id,
                tool,
                detail,
                agent_path,
            } => RunEvent::HookDecision {
                hook,
                event: hook_event_name(&event),
                decision,
                call_id,
                tool,
                detail,
                agent_path: path(agent_path),
            },
            WireEvent::AwaitingApproval {
                pending,
                agent_path,
            } => RunEvent::AwaitingApproval {
                pending,
                agent_path: path(agent_path),
            },
            WireEvent::ApprovalResolved {
                decision,
                by,
                agent_path,
            } => RunEvent::ApprovalResolved {
                decision,
                by,
                agent_path: path(agent_path),
            },
            WireEvent::RunFinished {
                run_id,
                stop,
                agent_path,
            } => RunEvent::RunFinished {
                run_id,
                stop,
                agent_path: path(agent_path),
            },
            WireEvent::RunFailed {
                run_id,
                error,
                agent_path,
            } => RunEvent::RunFailed {
                run_id,
                error,
                agent_path: path(agent_path),
            },
        }
    }
}

/// The name of the hook event a decision was taken at, as the runtime names it: the runtime
/// reports decisions at BeforeTool.
fn hook_event_name(name: &str) -> &'static str {
    match name {
        "BeforeTool" => "BeforeTool",
        _ => "a hook event",
    }
}
