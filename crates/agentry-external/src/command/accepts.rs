//! Which fields of an answer each event accepts, as Claude Code's protocol (and agentry's own
//! events) define them; and which events can decide anything at all.

use crate::claude::EventName;
use agentry_core::hooks::EventKind;

/// Which fields an event accepts.
#[derive(Clone, Copy, Default)]
pub(super) struct Accepts {
    pub(super) decision: bool,
    pub(super) permission: bool,
    pub(super) updated_input: bool,
    pub(super) context: bool,
    pub(super) updated_output: bool,
    pub(super) permission_request: bool,
    pub(super) plain_context: bool,
    pub(super) blocks: bool,
}

/// The fields `event` accepts.
pub(super) fn accepts(event: EventName) -> Accepts {
    let none = Accepts::default();
    match event {
        EventName::PreToolUse => Accepts {
            decision: true,
            permission: true,
            updated_input: true,
            context: true,
            blocks: true,
            ..none
        },
        EventName::PostToolUse => Accepts {
            decision: true,
            context: true,
            updated_output: true,
            blocks: true,
            ..none
        },
        EventName::PostToolUseFailure => Accepts {
            decision: true,
            context: true,
            blocks: true,
            ..none
        },
        EventName::UserPromptSubmit => Accepts {
            decision: true,
            context: true,
            plain_context: true,
            blocks: true,
            ..none
        },
        EventName::Stop | EventName::SubagentStop => Accepts {
            decision: true,
            context: true,
            blocks: true,
            ..none
        },
        EventName::PreCompact => Accepts {
            decision: true,
            blocks: true,
            ..none
        },
        EventName::SessionStart => Accepts {
            context: true,
            plain_context: true,
            ..none
        },
        EventName::SubagentStart => Accepts {
            context: true,
            ..none
        },
        EventName::PermissionRequest => Accepts {
            permission_request: true,
            ..none
        },
        EventName::PostCompact
        | EventName::SessionEnd
        | EventName::Notification
        | EventName::PostToolBatch => none,
        EventName::Agentry(kind) => {
            let blocks = matches!(
                kind,
                EventKind::BeforeStep
                    | EventKind::AfterStep
                    | EventKind::Stop
                    | EventKind::AfterModel
                    | EventKind::TextDelta
                    | EventKind::Thinking
                    | EventKind::BeforeTool
                    | EventKind::BeforeSubAgent
                    | EventKind::BeforeCompact
                    | EventKind::ApprovalRequested
                    | EventKind::BeforeToolBatch
            );
            Accepts {
                decision: blocks,
                blocks,
                updated_input: matches!(
                    kind,
                    EventKind::RunStart | EventKind::BeforeTool | EventKind::BeforeSubAgent
                ),
                context: matches!(
                    kind,
                    EventKind::RunStart
                        | EventKind::AfterTool
                        | EventKind::ToolFailed
                        | EventKind::BeforeSubAgent
                ),
                updated_output: kind == EventKind::AfterTool,
                ..none
            }
        }
    }
}

/// True when an answer on `event` can decide something (a permission, a block, an input, context
/// or output); false for events that only observe, whose deliveries may be retried.
pub(crate) fn decides(event: EventName) -> bool {
    let a = accepts(event);
    a.decision
        || a.permission
        || a.updated_input
        || a.context
        || a.updated_output
        || a.permission_request
        || a.plain_context
        || a.blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observers_decide_nothing() {
        for event in [
            EventName::PostCompact,
            EventName::SessionEnd,
            EventName::Notification,
            EventName::Agentry(EventKind::RunEnd),
            EventName::Agentry(EventKind::AfterCompact),
        ] {
            assert!(!decides(event), "{event}");
        }
        for event in [
            EventName::PreToolUse,
            EventName::Stop,
            EventName::SessionStart,
            EventName::PermissionRequest,
            EventName::Agentry(EventKind::AfterStep),
        ] {
            assert!(decides(event), "{event}");
        }
    }
}
