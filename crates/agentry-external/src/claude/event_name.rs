//! The events a settings file names, and the agentry events they map to.

use agentry_core::hooks::{EventKind, Events};
use std::fmt;
use std::time::Duration;

/// An event a command hook can be registered for: one of Claude Code's, mapped onto agentry's
/// lifecycle, or any agentry event under its own name.
///
/// | Claude Code event | agentry event |
/// |---|---|
/// | `PreToolUse` | BeforeTool |
/// | `PostToolUse` | AfterTool |
/// | `PostToolUseFailure` | ToolFailed |
/// | `UserPromptSubmit` | RunStart |
/// | `Stop` | Stop of a top-level run |
/// | `SubagentStop` | Stop of a sub-agent's run |
/// | `SubagentStart` | BeforeSubAgent |
/// | `PreCompact` / `PostCompact` | BeforeCompact / AfterCompact |
/// | `SessionStart` | RunStart of a session's first run in this process |
/// | `SessionEnd` | RunEnd or RunFailed of a top-level run without a session id |
/// | `PermissionRequest`, `Notification` | ApprovalRequested |
/// | `PostToolBatch` | AfterToolBatch |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventName {
    /// Before a tool runs: allow, deny, ask, or rewrite its input.
    PreToolUse,
    /// After a tool returned: add context, or replace what the model sees.
    PostToolUse,
    /// After a tool failed: add context for the model.
    PostToolUseFailure,
    /// A run starts with the user's prompt: add context, or block the prompt.
    UserPromptSubmit,
    /// A top-level run is about to stop: block the stop with a reason the model sees.
    Stop,
    /// A sub-agent's run is about to stop: block the stop with a reason.
    SubagentStop,
    /// A sub-agent is about to start: add context to its input.
    SubagentStart,
    /// The history is about to be compacted: block it.
    PreCompact,
    /// The history was compacted: observe the summary.
    PostCompact,
    /// A session's first run starts: add context.
    SessionStart,
    /// A session ended: observe.
    SessionEnd,
    /// A tool call needs approval: allow or deny it.
    PermissionRequest,
    /// Something needs the user's attention (an approval prompt): observe.
    Notification,
    /// The tool calls of one model turn all have their results: observe them together.
    PostToolBatch,
    /// Any agentry event, under its own name, with its payload as JSON.
    Agentry(EventKind),
}

/// Every event of Claude Code's protocol that agentry maps, with its name.
const CLAUDE: [(EventName, &str); 14] = [
    (EventName::PreToolUse, "PreToolUse"),
    (EventName::PostToolUse, "PostToolUse"),
    (EventName::PostToolUseFailure, "PostToolUseFailure"),
    (EventName::UserPromptSubmit, "UserPromptSubmit"),
    (EventName::Stop, "Stop"),
    (EventName::SubagentStop, "SubagentStop"),
    (EventName::SubagentStart, "SubagentStart"),
    (EventName::PreCompact, "PreCompact"),
    (EventName::PostCompact, "PostCompact"),
    (EventName::SessionStart, "SessionStart"),
    (EventName::SessionEnd, "SessionEnd"),
    (EventName::PermissionRequest, "PermissionRequest"),
    (EventName::Notification, "Notification"),
    (EventName::PostToolBatch, "PostToolBatch"),
];

/// The agentry events a command can handle under their own names (every event with a payload,
/// except the meta events, which observe hooks themselves).
const NATIVE: [EventKind; 27] = [
    EventKind::RunStart,
    EventKind::RunEnd,
    EventKind::RunFailed,
    EventKind::BeforeStep,
    EventKind::AfterStep,
    EventKind::BeforeModel,
    EventKind::AfterModel,
    EventKind::TextDelta,
    EventKind::Thinking,
    EventKind::BeforeTool,
    EventKind::AfterTool,
    EventKind::ToolFailed,
    EventKind::BeforeSubAgent,
    EventKind::AfterSubAgent,
    EventKind::SubAgentFailed,
    EventKind::ApprovalRequested,
    EventKind::ApprovalResolved,
    EventKind::StoppedByHuman,
    EventKind::BeforeCompact,
    EventKind::AfterCompact,
    EventKind::CompactFailed,
    EventKind::StateChange,
    EventKind::MessageAdded,
    EventKind::Custom,
    EventKind::Stop,
    EventKind::BeforeToolBatch,
    EventKind::AfterToolBatch,
];

impl EventName {
    /// The event named `name` (Claude Code's names first, then agentry's, then the names agentry's
    /// `*Failed` events had before: `ToolError` is `ToolFailed`), or `None` for a name neither
    /// knows. Names are case-sensitive, as in Claude Code.
    pub fn parse(name: &str) -> Option<EventName> {
        if let Some((event, _)) = CLAUDE.iter().find(|(_, n)| *n == name) {
            return Some(*event);
        }
        NATIVE
            .iter()
            .copied()
            .find(|kind| kind.name() == name)
            .or_else(|| {
                EventKind::FORMER_NAMES
                    .iter()
                    .find(|(former, _)| *former == name)
                    .map(|(_, kind)| *kind)
            })
            .map(EventName::Agentry)
    }

    /// Claude Code's event names, as settings files spell them.
    pub fn claude_names() -> impl Iterator<Item = &'static str> {
        CLAUDE.iter().map(|(_, name)| *name)
    }

    /// The name as settings files and the `hook_event_name` field spell it.
    pub fn name(self) -> &'static str {
        match self {
            EventName::Agentry(kind) => kind.name(),
            claude => {
                CLAUDE
                    .iter()
                    .find(|(e, _)| *e == claude)
                    .expect("every Claude event is listed")
                    .1
            }
        }
    }

    /// The agentry event it is fired on.
    pub fn kind(self) -> EventKind {
        match self {
            EventName::PreToolUse => EventKind::BeforeTool,
            EventName::PostToolUse => EventKind::AfterTool,
            EventName::PostToolUseFailure => EventKind::ToolFailed,
            EventName::UserPromptSubmit | EventName::SessionStart => EventKind::RunStart,
            EventName::Stop | EventName::SubagentStop => EventKind::Stop,
            EventName::SubagentStart => EventKind::BeforeSubAgent,
            EventName::PreCompact => EventKind::BeforeCompact,
            EventName::PostCompact => EventKind::AfterCompact,
            EventName::SessionEnd => EventKind::RunEnd,
            EventName::PermissionRequest | EventName::Notification => EventKind::ApprovalRequested,
            EventName::PostToolBatch => EventKind::AfterToolBatch,
            EventName::Agentry(kind) => kind,
        }
    }

    /// The agentry events a hook for this event must receive.
    pub(crate) fn wants(self) -> Events {
        match self {
            // A session ends with its run, however the run ends; its start is noted (only a
            // session these hooks saw start is ended by them).
            EventName::SessionEnd => Events::RUN_START | Events::RUN_END | Events::RUN_FAILED,
            // A session starts with its first run, and again (source `compact`) after its
            // history was compacted.
            EventName::SessionStart => Events::RUN_START | Events::AFTER_COMPACT,
            other => other.kind().flag(),
        }
    }

    /// How long a command may run when its spec sets no timeout: Claude Code's defaults (30
    /// seconds for UserPromptSubmit, 1.5 for SessionEnd, 10 minutes for the rest).
    pub fn default_timeout(self) -> Duration {
        match self {
            EventName::UserPromptSubmit => Duration::from_secs(30),
            EventName::SessionEnd => Duration::from_millis(1500),
            _ => Duration::from_secs(600),
        }
    }

    /// True when the event's matcher is tested against something (a tool name, a source, an
    /// agent type); false when its hooks always fire and a matcher is ignored.
    pub fn has_matcher(self) -> bool {
        match self {
            EventName::UserPromptSubmit | EventName::Stop | EventName::PostToolBatch => false,
            EventName::Agentry(kind) => matches!(
                kind,
                EventKind::BeforeTool
                    | EventKind::AfterTool
                    | EventKind::ToolFailed
                    | EventKind::BeforeSubAgent
                    | EventKind::AfterSubAgent
                    | EventKind::SubAgentFailed
                    | EventKind::ApprovalRequested
                    | EventKind::ApprovalResolved
            ),
            _ => true,
        }
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (event, name) in CLAUDE {
            assert_eq!(EventName::parse(name), Some(event));
            assert_eq!(event.name(), name);
        }
        for kind in NATIVE {
            let parsed = EventName::parse(kind.name()).unwrap();
            assert_eq!(parsed.kind(), kind);
        }
        // Claude Code's Stop wins over agentry's event of the same name.
        assert_eq!(EventName::parse("Stop"), Some(EventName::Stop));
        assert_eq!(EventName::parse("stop"), None);
        assert_eq!(EventName::parse("HookFailed"), None);
        assert_eq!(EventName::parse("Setup"), None);
    }

    #[test]
    fn the_former_names_of_the_failed_events_still_parse() {
        for (former, kind) in EventKind::FORMER_NAMES {
            assert_eq!(EventName::parse(former), Some(EventName::Agentry(kind)));
            // Named as it is now.
            assert!(EventName::Agentry(kind).name().ends_with("Failed"));
            let read: EventKind = serde_json::from_value(serde_json::json!(former)).unwrap();
            assert_eq!(read, kind);
        }
    }

    #[test]
    fn default_timeouts_follow_the_protocol() {
        assert_eq!(
            EventName::PreToolUse.default_timeout(),
            Duration::from_secs(600)
        );
        assert_eq!(
            EventName::UserPromptSubmit.default_timeout(),
            Duration::from_secs(30)
        );
    }
}
