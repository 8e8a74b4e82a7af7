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

use agentry_core::RunEvent;
use serde::{Deserialize, Serialize};

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
        let (text, path, run, thinking) = match &event {
            WireEvent::Run(RunEvent::TextDelta {
                text,
                agent_path,
                run_id,
            }) => (text, agent_path, run_id, false),
            WireEvent::Run(RunEvent::ThinkingDelta {
                text,
                agent_path,
                run_id,
            }) => (text, agent_path, run_id, true),
            // A model's progress is for whoever watches live; the history does not keep it.
            WireEvent::Run(RunEvent::ModelProgress { .. }) => return,
            _ => {
                out.push(event);
                return;
            }
        };
        self.pieces += 1;
        if self.pieces > EXACT_PIECES {
            let last = match out.last_mut() {
                Some(WireEvent::Run(RunEvent::TextDelta {
                    text: last,
                    agent_path,
                    run_id,
                })) if !thinking && agent_path == path && run_id == run => Some(last),
                Some(WireEvent::Run(RunEvent::ThinkingDelta {
                    text: last,
                    agent_path,
                    run_id,
                })) if thinking && agent_path == path && run_id == run => Some(last),
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

/// An entry of a run's recorded events: a run event in its one JSON form, or a marker of where a
/// sub-agent's run starts and where its events join this run's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireEvent {
    /// A run event.
    Run(RunEvent),
    /// Not a run event: the run of a sub-agent, `run_id` (a child workflow), starts. A stream of
    /// this run's events follows that run's own until they join this run's
    /// ([`WireEvent::SubRunEvents`]).
    SubRunStarted {
        /// The sub-agent's run.
        run_id: String,
    },
    /// Not a run event: the `count` events that follow are those of the sub-agent's run
    /// `run_id` from its position `from` on, which joined this run's when it ended.
    SubRunEvents {
        /// The sub-agent's run.
        run_id: String,
        /// The position of the first of them in its run's events.
        from: usize,
        /// How many follow.
        count: usize,
    },
}

impl From<RunEvent> for WireEvent {
    fn from(event: RunEvent) -> Self {
        WireEvent::Run(event)
    }
}

impl WireEvent {
    /// True for the end (finished or failed) of run `run_id`; a pause for a person is not.
    pub(crate) fn ends(&self, run_id: &str) -> bool {
        match self {
            // A pause for a person ends the run's course until it is decided, not the run.
            WireEvent::Run(RunEvent::RunFinished {
                run_id: id, stop, ..
            }) => id == run_id && !stop.is_paused(),
            WireEvent::Run(RunEvent::RunFailed { run_id: id, .. }) => id == run_id,
            _ => false,
        }
    }

    /// The run event; `None` for a marker.
    pub(crate) fn into_event(self) -> Option<RunEvent> {
        match self {
            WireEvent::Run(event) => Some(event),
            WireEvent::SubRunStarted { .. } | WireEvent::SubRunEvents { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(piece: &str) -> WireEvent {
        WireEvent::Run(RunEvent::TextDelta {
            text: piece.into(),
            agent_path: "a".into(),
            run_id: None,
        })
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
                    WireEvent::Run(RunEvent::StepFinished {
                        step: 1,
                        usage: Default::default(),
                        agent_path: "a".into(),
                        run_id: None,
                    }),
                );
            }
        }
        let joined: String = out
            .iter()
            .filter_map(|e| match e {
                WireEvent::Run(RunEvent::TextDelta { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let expected: String = (0..pieces).map(|i| format!("{}", i % 10)).collect();
        assert_eq!(joined, expected);
        // The first pieces as they came, the rest joined into pieces of about JOINED_PIECE bytes.
        assert!(out[..EXACT_PIECES - 1].iter().all(
            |e| matches!(e, WireEvent::Run(RunEvent::TextDelta { text, .. }) if text.len() == 1)
        ));
        let rest = out.len() - EXACT_PIECES;
        assert!(
            rest <= 3 + 20_000 / JOINED_PIECE,
            "{rest} events after the exact pieces"
        );
        assert!(
            out.iter()
                .any(|e| matches!(e, WireEvent::Run(RunEvent::StepFinished { .. })))
        );
    }
}
