//! A run's events as its history records them: activities return the events their effects
//! sent, the workflow adds the events of the run's course, and a client reads them back with a
//! query ([`RunHandle::events`](crate::RunHandle::events)).
//!
//! Streamed pieces of text and reasoning (`TextDelta`, `ThinkingDelta`) are recorded as the
//! model sent them, in the result of the model step that streamed them: a client's stream gets
//! them, in order and before the turn's `Message`, once that step's activity completes. A turn
//! that streams more than [`EXACT_PIECES`] pieces has the rest joined into pieces of about
//! [`JOINED_PIECE`] bytes ([`Recording`]), so a long answer keeps its activity's result well
//! within Temporal's payload limit (the text is the same, in fewer pieces).

use agentry_core::agent::CompactStrategy;
use agentry_core::{
    Decision, Message, PendingApproval, RunEvent, StateSource, StopReason, ToolResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// How many streamed pieces an activity records as the model sent them.
pub(crate) const EXACT_PIECES: usize = 2_000;

/// The size, in bytes, past which a joined piece is not joined further.
pub(crate) const JOINED_PIECE: usize = 4_096;

/// Records an activity's events, joining streamed pieces past the first [`EXACT_PIECES`].
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pieces: usize,
}

impl Recording {
    /// Appends `event` to `out`: as it is, or joined to the piece before it.
    pub(crate) fn push(&mut self, out: &mut Vec<WireEvent>, event: WireEvent) {
        let (text, path, thinking) = match &event {
            WireEvent::TextDelta { text, agent_path } => (text, agent_path, false),
            WireEvent::ThinkingDelta { text, agent_path } => (text, agent_path, true),
            _ => {
                out.push(event);
                return;
            }
        };
        self.pieces += 1;
        if self.pieces > EXACT_PIECES {
            let last = match out.last_mut() {
                Some(WireEvent::TextDelta {
                    text: last,
                    agent_path,
                }) if !thinking && agent_path == path => Some(last),
                Some(WireEvent::ThinkingDelta {
                    text: last,
                    agent_path,
                }) if thinking && agent_path == path => Some(last),
                _ => None,
            };
            if let Some(last) = last
                && last.len() < JOINED_PIECE
            {
                last.push_str(text);
                return;
            }
        }
        out.push(event);
    }
}

/// A [`RunEvent`] as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)]
pub(crate) enum WireEvent {
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
    TextDelta {
        text: String,
        agent_path: String,
    },
    ThinkingDelta {
        text: String,
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
    Compacted {
        removed: usize,
        strategy: String,
        summary: String,
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
    /// Not a run event: the run of a sub-agent, `run_id` (a child workflow), starts. A stream of
    /// this run's events follows that run's own until they join this run's
    /// ([`WireEvent::SubRunEvents`]).
    SubRunStarted {
        run_id: String,
    },
    /// Not a run event: the `count` events that follow are those of the sub-agent's run
    /// `run_id` from its position `from` on, which joined this run's when it ended.
    SubRunEvents {
        run_id: String,
        from: usize,
        count: usize,
    },
}

impl WireEvent {
    /// The recorded form of `event`; `None` for events a later version adds, which this one
    /// does not know how to record.
    pub(crate) fn of(event: RunEvent) -> Option<WireEvent> {
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
            RunEvent::TextDelta { text, agent_path } => WireEvent::TextDelta {
                text,
                agent_path: path(agent_path),
            },
            RunEvent::ThinkingDelta { text, agent_path } => WireEvent::ThinkingDelta {
                text,
                agent_path: path(agent_path),
            },
            RunEvent::Compacted {
                removed,
                strategy,
                summary,
                agent_path,
            } => WireEvent::Compacted {
                removed,
                strategy: strategy.to_string(),
                summary,
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
    pub(crate) fn ends(&self, run_id: &str) -> bool {
        matches!(
            self,
            WireEvent::RunFinished { run_id: id, .. } | WireEvent::RunFailed { run_id: id, .. }
                if id == run_id
        )
    }

    /// The event as the in-process runtime sends it; `None` for a marker that is not a run
    /// event.
    pub(crate) fn into_event(self) -> Option<RunEvent> {
        let path = |p: String| Arc::<str>::from(p);
        Some(match self {
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
            WireEvent::TextDelta { text, agent_path } => RunEvent::TextDelta {
                text,
                agent_path: path(agent_path),
            },
            WireEvent::ThinkingDelta { text, agent_path } => RunEvent::ThinkingDelta {
                text,
                agent_path: path(agent_path),
            },
            WireEvent::Compacted {
                removed,
                strategy,
                summary,
                agent_path,
            } => RunEvent::Compacted {
                removed,
                strategy: strategy_name(&strategy),
                summary,
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
            WireEvent::SubRunStarted { .. } | WireEvent::SubRunEvents { .. } => return None,
        })
    }
}

/// A compaction strategy's name as the runtime names it.
fn strategy_name(name: &str) -> &'static str {
    match name {
        "window" => CompactStrategy::Window.as_str(),
        _ => CompactStrategy::Summarize.as_str(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(piece: &str) -> WireEvent {
        WireEvent::TextDelta {
            text: piece.into(),
            agent_path: "a".into(),
        }
    }

    #[test]
    fn pieces_past_the_exact_ones_are_joined_and_the_text_stays_the_same() {
        let mut recording = Recording::default();
        let mut out = Vec::new();
        let pieces = EXACT_PIECES + 20_000;
        for i in 0..pieces {
            recording.push(&mut out, text(&format!("{}", i % 10)));
            if i == EXACT_PIECES + 5 {
                // Another event between pieces is kept in its place.
                recording.push(
                    &mut out,
                    WireEvent::StepFinished {
                        step: 1,
                        agent_path: "a".into(),
                    },
                );
            }
        }
        let joined: String = out
            .iter()
            .filter_map(|e| match e {
                WireEvent::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let expected: String = (0..pieces).map(|i| format!("{}", i % 10)).collect();
        assert_eq!(joined, expected);
        // The first pieces as they came, the rest joined into pieces of about JOINED_PIECE bytes.
        assert!(
            out[..EXACT_PIECES - 1]
                .iter()
                .all(|e| matches!(e, WireEvent::TextDelta { text, .. } if text.len() == 1))
        );
        let rest = out.len() - EXACT_PIECES;
        assert!(
            rest <= 3 + 20_000 / JOINED_PIECE,
            "{rest} events after the exact pieces"
        );
        assert!(
            out.iter()
                .any(|e| matches!(e, WireEvent::StepFinished { .. }))
        );
    }
}
