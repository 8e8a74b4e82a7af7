//! A fork: a new run that starts where a stored run stood at the end of one of its steps, with
//! its history and state as they were then, optionally with a different input or state ("what
//! if the model had been told this?").
//!
//! The stored run's last checkpoint holds its whole history; its recorded events say how long
//! the history was at the end of each step and how its state changed (the state a run starts
//! with is recorded as its first `state_patch`). A fork takes the history's first messages as
//! they stand in the checkpoint (the real messages, not the masked ones of the event history)
//! and replays the state patches up to the step. The forked run gets a new id, keeps the
//! original's agent, user, tags and stored hooks, leaves its session (a branch is not the
//! conversation's next turn), and records where it came from in its metadata (`forked_from`,
//! `forked_at_step`).
//!
//! ```
//! use agentry_core::fork::Fork;
//! use agentry_core::{Message, RunEvent, RunSnapshot, StoredEvent};
//!
//! // A run that asked, called a tool, and answered: two steps.
//! let mut run = RunSnapshot::new("r-1", "helper");
//! for m in [
//!     Message::user("What is 2 + 2?"),
//!     Message::assistant("Let me add."),
//!     Message::user("4"),
//!     Message::assistant("It is 4."),
//! ] {
//!     run.messages.push(m);
//! }
//! run.step = 2;
//! let path = || std::sync::Arc::<str>::from("helper");
//! let events: Vec<StoredEvent> = [
//!     RunEvent::RunStarted { run_id: "r-1".into(), agent_path: path() },
//!     RunEvent::Message { message: run.messages.get_shared(0).unwrap().clone(), agent_path: path(), run_id: None },
//!     RunEvent::StepStarted { step: 1, agent_path: path(), run_id: None },
//!     RunEvent::Message { message: run.messages.get_shared(1).unwrap().clone(), agent_path: path(), run_id: None },
//!     RunEvent::Message { message: run.messages.get_shared(2).unwrap().clone(), agent_path: path(), run_id: None },
//!     RunEvent::StepFinished { step: 1, usage: Default::default(), agent_path: path(), run_id: None },
//!     RunEvent::StepStarted { step: 2, agent_path: path(), run_id: None },
//!     RunEvent::Message { message: run.messages.get_shared(3).unwrap().clone(), agent_path: path(), run_id: None },
//!     RunEvent::StepFinished { step: 2, usage: Default::default(), agent_path: path(), run_id: None },
//! ]
//! .iter()
//! .filter_map(RunEvent::to_recorded)
//! .enumerate()
//! .map(|(i, event)| StoredEvent { seq: i as u64 + 1, event })
//! .collect();
//!
//! // From the end of step 1, told something else.
//! let fork = Fork::at(1).input("Use 5 instead of 4.");
//! let forked = fork.snapshot(&run, &events, "r-2").unwrap();
//! assert_eq!(forked.run_id, "r-2");
//! assert_eq!(forked.step, 1);
//! assert_eq!(forked.messages.len(), 4);
//! assert_eq!(forked.messages.last().unwrap().text(), "Use 5 instead of 4.");
//!
//! // Step 0 is the start: the input itself is replaced.
//! let forked = Fork::at(0).input("What is 3 + 3?").snapshot(&run, &events, "r-3").unwrap();
//! assert_eq!(forked.messages.len(), 1);
//! assert_eq!(forked.messages.last().unwrap().text(), "What is 3 + 3?");
//! ```

use crate::{Content, Message, Role, RunEvent, RunSnapshot, StoredEvent};
use serde_json::Value;

/// Where a fork starts and what it changes ([`Fork::snapshot`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fork {
    /// The step whose end the fork starts from; 0 is the run's start (its input added, before
    /// its first step).
    pub step: u32,
    /// A message to go on with: at step 0 it replaces the run's input; after a step it is
    /// added to the history as the user's.
    pub input: Option<Content>,
    /// The state to go on with, instead of the state as it was at that step.
    pub state: Option<Value>,
}

/// Why a run cannot be forked where asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    /// There is no such run to fork (or no store to read it from).
    #[error("run `{run_id}` cannot be forked: {why}")]
    NoSuchRun {
        /// The run asked for.
        run_id: String,
        /// Why it cannot be read.
        why: String,
    },
    /// The run did not finish that step.
    #[error("run `{run_id}` has no step {step} to fork from: it finished {finished} step(s)")]
    NoSuchStep {
        /// The run.
        run_id: String,
        /// The step asked for.
        step: u32,
        /// How many steps it finished.
        finished: u32,
    },
    /// The run's history was compacted, so the checkpoint no longer holds the history of every
    /// step.
    #[error(
        "run `{run_id}` was compacted, so its checkpoint no longer holds the history as it was at each step; fork a run that was not"
    )]
    Compacted {
        /// The run.
        run_id: String,
    },
    /// The recorded events do not account for the checkpoint's history (a run recorded by a
    /// build that did not record every message), or its state patches do not apply.
    #[error("run `{run_id}` cannot be forked from its recording: {why}")]
    Recording {
        /// The run.
        run_id: String,
        /// What does not add up.
        why: String,
    },
    /// The step ended with the model's answer, so the fork would have nothing to go on with.
    #[error(
        "step {step} of run `{run_id}` ended with the model's answer: give the fork an input to go on with"
    )]
    NothingToDo {
        /// The run.
        run_id: String,
        /// The step.
        step: u32,
    },
}

/// What the recording says: the boundary at the fork's step, the one at the end, and how many
/// steps the run finished.
#[derive(Debug)]
struct Reading {
    at: Boundary,
    end: Boundary,
    finished: u32,
}

/// A recording of `run` that does not add up, saying `why`.
fn unreadable(run: &RunSnapshot, why: String) -> ForkError {
    ForkError::Recording {
        run_id: run.run_id.clone(),
        why,
    }
}

/// What the recording says about one step boundary of the run's own agent.
#[derive(Debug, Default)]
struct Boundary {
    /// Messages recorded up to it.
    messages: usize,
    /// State patches recorded up to it, applied in order.
    state: Option<Value>,
}

impl Fork {
    /// A fork from the end of step `step` (0: the run's start).
    pub fn at(step: u32) -> Self {
        Fork {
            step,
            ..Fork::default()
        }
    }

    /// Goes on with `input`: at step 0 instead of the run's input, after a step as the user's
    /// next message.
    pub fn input(mut self, input: impl Into<Content>) -> Self {
        self.input = Some(input.into());
        self
    }

    /// Goes on with `state` instead of the state as it was at the step.
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The snapshot a fork of `run` (its last checkpoint) starts from, as run `run_id`, given
    /// the run's recorded `events` (`RunStore::events`). Resume it to run the fork.
    ///
    /// # Errors
    /// [`ForkError`]: the step was not finished, the history was compacted, the recording does
    /// not account for the history, or nothing would follow.
    pub fn snapshot(
        &self,
        run: &RunSnapshot,
        events: &[StoredEvent],
        run_id: impl Into<String>,
    ) -> Result<RunSnapshot, ForkError> {
        let Reading { at, end, finished } = self.read(run, events)?;
        let recorded = end.messages;
        let history = run.messages.len();
        // Messages the run started with that it did not add itself (a session's earlier turns,
        // the history of the run it was forked from) come first.
        let before = history.checked_sub(recorded).ok_or_else(|| {
            unreadable(
                run,
                format!("it recorded {recorded} messages and its history holds {history}"),
            )
        })?;
        if self.step > finished {
            return Err(ForkError::NoSuchStep {
                run_id: run.run_id.clone(),
                step: self.step,
                finished,
            });
        }
        let mut forked = RunSnapshot::new(run_id, run.agent.clone());
        forked.user_id = run.user_id.clone();
        forked.tags = run.tags.clone();
        forked.metadata = run.metadata.clone();
        forked
            .metadata
            .insert("forked_from".into(), Value::String(run.run_id.clone()));
        forked
            .metadata
            .insert("forked_at_step".into(), Value::from(self.step));
        forked.hooks = run.hooks.clone();
        forked.step = self.step;
        for i in 0..before + at.messages {
            if let Some(m) = run.messages.get_shared(i) {
                forked.messages.push(m.clone());
            }
        }
        forked.state = match (&self.state, at.state) {
            (Some(state), _) => state.clone(),
            (None, Some(state)) => state,
            // No change recorded up to here: the state it started with, which is the state
            // it ended with when it never changed.
            (None, None) if end.state.is_none() => run.state.clone(),
            (None, None) => Value::Null,
        };
        match &self.input {
            Some(input) if self.step == 0 => {
                let last = forked.messages.len().checked_sub(1);
                match last.and_then(|i| forked.messages.get(i).map(|m| (i, m.role()))) {
                    Some((i, Role::User)) => forked.messages.set(i, Message::user(input.clone())),
                    _ => forked.messages.push(Message::user(input.clone())),
                }
            }
            Some(input) => forked.messages.push(Message::user(input.clone())),
            None => {
                if let Some(Message::Assistant { tool_calls, .. }) = forked.messages.last()
                    && tool_calls.is_empty()
                {
                    return Err(ForkError::NothingToDo {
                        run_id: run.run_id.clone(),
                        step: self.step,
                    });
                }
            }
        }
        Ok(forked)
    }

    /// Reads the recording (the run's own events; its sub-agents' are recorded beside them):
    /// what stood at the fork's step, at the end, and how many steps finished.
    fn read(&self, run: &RunSnapshot, events: &[StoredEvent]) -> Result<Reading, ForkError> {
        let mut own: Option<String> = None;
        let mut now = Boundary::default();
        let mut at = None;
        let mut finished = 0;
        let mut first_step = None;
        for stored in events {
            let Ok(event) = RunEvent::from_recorded(&stored.event) else {
                continue;
            };
            let path = own.get_or_insert_with(|| event.agent_path().to_owned());
            if event.agent_path() != path {
                continue;
            }
            match event {
                RunEvent::StepStarted { step, .. } => {
                    first_step.get_or_insert(step);
                    if step > self.step && at.is_none() {
                        at = Some((now.messages, now.state.clone()));
                    }
                }
                RunEvent::StepFinished { step, .. } => finished = finished.max(step),
                RunEvent::Message { .. } => now.messages += 1,
                RunEvent::Compacted { .. } => {
                    return Err(ForkError::Compacted {
                        run_id: run.run_id.clone(),
                    });
                }
                RunEvent::StatePatch { patch, .. } => {
                    let mut state = now.state.take().unwrap_or(Value::Null);
                    json_patch::patch(&mut state, &patch).map_err(|e| {
                        unreadable(run, format!(
                            "a state patch of event {} does not apply ({e}); its start state was not recorded",
                            stored.seq
                        ))
                    })?;
                    now.state = Some(state);
                }
                _ => {}
            }
        }
        // A run that began from a snapshot (a fork) recorded only the steps it ran itself.
        if let Some(first) = first_step
            && self.step + 1 < first
        {
            return Err(unreadable(
                run,
                format!(
                    "it began at step {first} from another run's history (its metadata names that run); fork that run to go back before step {}",
                    first - 1
                ),
            ));
        }
        let (messages, state) = at.unwrap_or_else(|| (now.messages, now.state.clone()));
        Ok(Reading {
            at: Boundary { messages, state },
            end: now,
            finished,
        })
    }
}
