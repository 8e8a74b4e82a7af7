//! The events a started run streams to its observer, and their one JSON form.

use crate::compaction::CompactStrategy;
use crate::run::EventKind;
use crate::run::recorded::RecordedEvent;
use crate::{Message, StateSource, StopReason, ToolResult, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The version of [`RunEvent`]'s JSON form. Within a version, fields are only ever added, with
/// defaults, so a reader of this version reads every event written since it; a change of a
/// field's meaning or a removal bumps it.
pub const EVENT_FORMAT_VERSION: u32 = 1;

/// One event of a run's event stream (`RunHandle::events` in the `agentry` crate).
///
/// Events of sub-agents arrive on their parent's stream, tagged with their `agent_path`
/// (`parent/child`, [`is_sub_agent`](Self::is_sub_agent)) and their run's id (`run_id`,
/// [`sub_agent_run`](Self::sub_agent_run): calls of one sub-agent at once share a path, not a
/// run), and a run that records its events records its sub-agents' beside its own, in the order
/// the stream carries them.
///
/// # JSON
///
/// An event has one JSON form, used by the store's recorded history, durable runtimes'
/// payloads, the `agentry` command's `--json` and the HTTP server: an object whose `type` is the
/// event's kind in snake case ([`RunEvent::kind`]) and whose other fields are the variant's,
/// by the same names (version [`EVENT_FORMAT_VERSION`]).
///
/// ```
/// use agentry_core::RunEvent;
/// let event = RunEvent::StepStarted { step: 2, agent_path: "helper".into(), run_id: None };
/// let json = serde_json::to_value(&event).unwrap();
/// assert_eq!(json, serde_json::json!({"type": "step_started", "step": 2, "agent_path": "helper"}));
/// assert_eq!(serde_json::from_value::<RunEvent>(json).unwrap().kind(), "step_started");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// A run (or sub-agent run) started.
    RunStarted {
        /// The run id.
        run_id: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
    },
    /// A step started.
    StepStarted {
        /// The step number (1-based).
        step: u32,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A step ended.
    StepFinished {
        /// The step number.
        step: u32,
        /// The tokens the step's model calls used (its turn, retries an AfterModel hook asked
        /// for, a compaction's summary); absent when none.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A model call is made, with the request as BeforeModel hooks left it. The system prompt,
    /// tools and parameters are given at the run's first call and at any call where hooks made
    /// them differ from the agent's own (a system prompt a hook removed is `""`); the messages
    /// as their number, since they are the run's history (its `message` events) unless hooks
    /// changed them.
    ModelRequest {
        /// How many messages the model is sent.
        messages: usize,
        /// True when BeforeModel hooks sent other messages than the run's history.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        messages_rewritten: bool,
        /// The system prompt, at the first call or when hooks changed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system: Option<Arc<str>>,
        /// The tools' names, at the first call or when hooks changed them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<Vec<String>>,
        /// The parameters, at the first call or when hooks changed them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<crate::ModelParams>,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// Streamed text.
    TextDelta {
        /// The piece of text.
        text: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// Streamed reasoning.
    ThinkingDelta {
        /// The piece of reasoning.
        text: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// How far the model's turn is before its text arrives (a local model reading a long
    /// prompt, or writing text it holds back): not recorded in the run's history.
    ModelProgress {
        /// Prompt tokens read, of how many, and tokens generated so far.
        #[serde(flatten)]
        progress: crate::TurnProgress,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
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
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A tool call settled (after AfterTool or ToolFailed hooks).
    ToolFinished {
        /// The result the model will see.
        result: ToolResult,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// The state changed; `patch` (RFC 6902) turns the previous state into the new one. A run
    /// that starts with a state (not `null`) reports it first, as one patch from nothing
    /// (`replace` at `""`, source `system`), before its RunStart hooks, so the state at any
    /// point is its patches applied in order.
    StatePatch {
        /// The JSON Patch.
        patch: json_patch::Patch,
        /// Who changed it.
        source: StateSource,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A message was added to the history.
    Message {
        /// The message.
        message: Arc<Message>,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// The history was compacted: `removed` older messages were replaced by one message.
    Compacted {
        /// How many messages were folded.
        removed: usize,
        /// How they were folded.
        strategy: CompactStrategy,
        /// The text that replaced them.
        summary: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A custom event emitted by a tool or hook.
    Custom {
        /// The event name.
        name: String,
        /// Its data.
        data: Value,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A hook decided something about what the run does: blocked, mocked, allowed or held a
    /// tool call for approval, or rewrote its input. Streamed only (a run without an event stream compares
    /// nothing).
    HookDecision {
        /// The hook whose decision stands; for a rewrite, the hooks that changed the input, in
        /// the order they ran, joined with `, `.
        hook: String,
        /// The event it decided on (`BeforeTool`).
        event: EventKind,
        /// What it did: `blocked`, `mocked`, `allowed`, `asked for approval`, `rewrote the
        /// input`.
        decision: String,
        /// What it decided about: the tool call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The reason, the mock's content or the new input, as text.
        detail: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A hook, or one handler of a hook (a command, a webhook), failed and the run went on: an
    /// advisory hook, or a command hook that fails open. (A failure that fails the run ends it
    /// with `run_failed` instead.)
    HookFailed {
        /// What failed, as errors name it: the hook, or the handler (a script and its command,
        /// a URL).
        hook: String,
        /// The event it handled.
        event: EventKind,
        /// What went wrong: an exit status and the end of its stderr, a timeout, output that is
        /// not the protocol's, the hook's error.
        error: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// The run paused: these calls wait for a person's decision.
    AwaitingApproval {
        /// The calls waiting, in call order.
        pending: Vec<crate::PendingApproval>,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// A pending call was decided.
    ApprovalResolved {
        /// The decision (it names the call).
        decision: crate::Decision,
        /// Who decided: `person`, or the deciding hook's name.
        by: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
        /// The sub-agent's run it belongs to, for a sub-agent's event (absent for the run's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<Arc<str>>,
    },
    /// The run ended.
    RunFinished {
        /// The run id.
        #[serde(default)]
        run_id: String,
        /// Why it ended.
        stop: StopReason,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
    },
    /// The run failed.
    RunFailed {
        /// The run id.
        #[serde(default)]
        run_id: String,
        /// The error, as text.
        error: String,
        /// The agent path.
        #[serde(default)]
        agent_path: Arc<str>,
    },
}

/// The `run_id` field of a sub-agent's event, for `&` and `&mut` alike (`None` for the kinds
/// that always carry their run id: a run's start and end).
macro_rules! run_id_field {
    ($event:expr) => {
        match $event {
            RunEvent::RunStarted { .. }
            | RunEvent::RunFinished { .. }
            | RunEvent::RunFailed { .. } => None,
            RunEvent::StepStarted { run_id, .. }
            | RunEvent::StepFinished { run_id, .. }
            | RunEvent::ModelRequest { run_id, .. }
            | RunEvent::TextDelta { run_id, .. }
            | RunEvent::ThinkingDelta { run_id, .. }
            | RunEvent::ModelProgress { run_id, .. }
            | RunEvent::ToolStarted { run_id, .. }
            | RunEvent::ToolFinished { run_id, .. }
            | RunEvent::StatePatch { run_id, .. }
            | RunEvent::Message { run_id, .. }
            | RunEvent::Compacted { run_id, .. }
            | RunEvent::AwaitingApproval { run_id, .. }
            | RunEvent::HookDecision { run_id, .. }
            | RunEvent::HookFailed { run_id, .. }
            | RunEvent::ApprovalResolved { run_id, .. }
            | RunEvent::Custom { run_id, .. } => Some(run_id),
        }
    };
}

impl RunEvent {
    /// The agent path of the run that produced the event.
    pub fn agent_path(&self) -> &str {
        match self {
            RunEvent::RunStarted { agent_path, .. }
            | RunEvent::StepStarted { agent_path, .. }
            | RunEvent::StepFinished { agent_path, .. }
            | RunEvent::ModelRequest { agent_path, .. }
            | RunEvent::TextDelta { agent_path, .. }
            | RunEvent::ThinkingDelta { agent_path, .. }
            | RunEvent::ModelProgress { agent_path, .. }
            | RunEvent::ToolStarted { agent_path, .. }
            | RunEvent::ToolFinished { agent_path, .. }
            | RunEvent::StatePatch { agent_path, .. }
            | RunEvent::Message { agent_path, .. }
            | RunEvent::Compacted { agent_path, .. }
            | RunEvent::AwaitingApproval { agent_path, .. }
            | RunEvent::HookDecision { agent_path, .. }
            | RunEvent::HookFailed { agent_path, .. }
            | RunEvent::ApprovalResolved { agent_path, .. }
            | RunEvent::Custom { agent_path, .. }
            | RunEvent::RunFinished { agent_path, .. }
            | RunEvent::RunFailed { agent_path, .. } => agent_path,
        }
    }
}

impl RunEvent {
    /// The state a run starts with, as its first event reports it: one patch from nothing
    /// (`replace` at `""`), source `system` (see [`RunEvent::StatePatch`]).
    pub fn start_state(state: Value, agent_path: Arc<str>) -> RunEvent {
        let op = json_patch::PatchOperation::Replace(json_patch::ReplaceOperation {
            path: json_patch::jsonptr::PointerBuf::default(),
            value: state,
        });
        RunEvent::StatePatch {
            patch: json_patch::Patch(vec![op]),
            source: StateSource::System,
            agent_path,
            run_id: None,
        }
    }

    /// The whole state, when this event sets it whole (a run's start state, as
    /// [`start_state`](Self::start_state) makes it): readers show it as a snapshot, not a change.
    pub fn whole_state(&self) -> Option<&Value> {
        let RunEvent::StatePatch {
            patch,
            source: StateSource::System,
            ..
        } = self
        else {
            return None;
        };
        match patch.0.as_slice() {
            [json_patch::PatchOperation::Replace(op)] if op.path.is_root() => Some(&op.value),
            _ => None,
        }
    }

    /// True for an event a run's history records: every kind but streamed pieces (text,
    /// reasoning) and a model's progress, whose complete turn a `message` event holds.
    pub fn is_recorded(&self) -> bool {
        !matches!(
            self,
            RunEvent::TextDelta { .. }
                | RunEvent::ThinkingDelta { .. }
                | RunEvent::ModelProgress { .. }
        )
    }

    /// True for an event of a sub-agent's run (its agent path is `parent/child`): a run's
    /// stream and recorded history carry its sub-agents' events beside its own.
    pub fn is_sub_agent(&self) -> bool {
        self.agent_path().contains('/')
    }

    /// For a sub-agent's event, the id of the sub-agent's run it belongs to: two calls of the
    /// same sub-agent (at once, or one after the other) share an agent path, not a run. `None`
    /// for the run's own events (and for a sub-agent's event recorded before runs were named
    /// on each event).
    pub fn sub_agent_run(&self) -> Option<&str> {
        if !self.is_sub_agent() {
            return None;
        }
        match self {
            RunEvent::RunStarted { run_id, .. }
            | RunEvent::RunFinished { run_id, .. }
            | RunEvent::RunFailed { run_id, .. } => {
                Some(run_id.as_str()).filter(|id| !id.is_empty())
            }
            _ => self.run_id_field().and_then(Option::as_deref),
        }
    }

    /// The same event, saying it belongs to the run `run_id` (runtimes name a sub-agent's run
    /// on each of its events; the run's start and end name it already).
    pub fn with_run_id(mut self, run_id: &Arc<str>) -> Self {
        if let Some(field) = self.run_id_field_mut() {
            *field = Some(run_id.clone());
        }
        self
    }

    fn run_id_field(&self) -> Option<&Option<Arc<str>>> {
        run_id_field!(self)
    }

    fn run_id_field_mut(&mut self) -> Option<&mut Option<Arc<str>>> {
        run_id_field!(self)
    }

    /// The event's kind, as its history records it (`run_started`, `tool_finished`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::StepStarted { .. } => "step_started",
            RunEvent::StepFinished { .. } => "step_finished",
            RunEvent::ModelRequest { .. } => "model_request",
            RunEvent::TextDelta { .. } => "text_delta",
            RunEvent::ThinkingDelta { .. } => "thinking_delta",
            RunEvent::ModelProgress { .. } => "model_progress",
            RunEvent::ToolStarted { .. } => "tool_started",
            RunEvent::ToolFinished { .. } => "tool_finished",
            RunEvent::StatePatch { .. } => "state_patch",
            RunEvent::Message { .. } => "message",
            RunEvent::Compacted { .. } => "compacted",
            RunEvent::Custom { .. } => "custom",
            RunEvent::AwaitingApproval { .. } => "awaiting_approval",
            RunEvent::HookDecision { .. } => "hook_decision",
            RunEvent::HookFailed { .. } => "hook_failed",
            RunEvent::ApprovalResolved { .. } => "approval_resolved",
            RunEvent::RunFinished { .. } => "run_finished",
            RunEvent::RunFailed { .. } => "run_failed",
        }
    }

    /// The same event with the bytes of its media parts replaced by references to them, or
    /// `None` when it carries no loaded media (most events: nothing is copied for them).
    pub fn with_media_references(&self) -> Option<RunEvent> {
        let loaded = |c: &crate::Content| c.blobs().any(crate::content::Blob::is_loaded);
        match self {
            RunEvent::Message {
                message,
                agent_path,
                run_id,
            } if message.content().is_some_and(loaded) => {
                let mut m = (**message).clone();
                if let Some(content) = m.content_mut() {
                    *content = content.references();
                }
                Some(RunEvent::Message {
                    message: Arc::new(m),
                    agent_path: agent_path.clone(),
                    run_id: run_id.clone(),
                })
            }
            RunEvent::ToolFinished { result, .. } if loaded(&result.content) => {
                let mut event = self.clone();
                if let RunEvent::ToolFinished { result, .. } = &mut event {
                    result.content = result.content.references();
                }
                Some(event)
            }
            _ => None,
        }
    }

    /// The event as its history records it, now: its kind, and its JSON form without the
    /// `type` field; `None` for streamed text and reasoning pieces, which the complete turn's
    /// `message` event holds whole, and for a model's progress. Media parts are recorded by
    /// reference (their SHA-256 and size): their bytes are in the run's messages, once.
    pub fn to_recorded(&self) -> Option<RecordedEvent> {
        if !self.is_recorded() {
            return None;
        }
        let referenced = self.with_media_references();
        let event = referenced.as_ref().unwrap_or(self);
        let mut data = serde_json::to_value(event).ok()?;
        if let Value::Object(fields) = &mut data {
            fields.remove("type");
        }
        Some(RecordedEvent::now(self.kind(), data))
    }

    /// The event a history recorded ([`to_recorded`](Self::to_recorded)), in any version of its
    /// form: the fields older versions did not record take their defaults (an empty agent
    /// path; an empty run id at the run's end).
    ///
    /// # Errors
    /// The record is not a run event of a kind this version knows, or its data do not fit it.
    pub fn from_recorded(recorded: &RecordedEvent) -> Result<RunEvent, serde_json::Error> {
        let mut data = match &recorded.data {
            Value::Object(fields) => fields.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "a `{}` event's data is not an object: {other}",
                    recorded.kind
                )));
            }
        };
        data.insert("type".into(), Value::String(recorded.kind.clone()));
        serde_json::from_value(Value::Object(data))
    }
}
