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
    /// A tool call is about to run (after BeforeTool hooks).
    ToolStarted {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The input the tool receives.
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
            | RunEvent::Custom { agent_path, .. }
            | RunEvent::RunFinished { agent_path, .. }
            | RunEvent::RunFailed { agent_path, .. } => agent_path,
        }
    }
}
