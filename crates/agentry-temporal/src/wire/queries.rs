//! What a client reads of a running workflow: its view, its identity, its events by page.

use super::*;
use crate::events::WireEvent;
use crate::ledger::{HistoryDelta, Ledger};
use agentry_core::hooks::HookSpecRecord;
use agentry_core::{History, RunMachine, RunSnapshot, SNAPSHOT_VERSION};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The run as an activity receives it: its snapshot without the history, and the history as a
/// delta the worker completes ([`crate::ledger`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RunView {
    /// The run, its `messages` left empty.
    pub snapshot: RunSnapshot,
    /// Its history.
    pub history: HistoryDelta,
    /// The id of the run at the top of the tree, for a sub-agent's run.
    #[serde(default)]
    pub root_run_id: Option<String>,
}

/// The run's identity, kept by the workflow to describe the run to activities.
#[derive(Clone, Debug, Default)]
pub(crate) struct Identity {
    /// The run id.
    pub run_id: String,
    /// The agent.
    pub agent: String,
    /// The session id.
    pub session_id: Option<String>,
    /// The user id.
    pub user_id: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Metadata.
    pub metadata: serde_json::Map<String, Value>,
    /// The run above it, for a sub-agent's run.
    pub parent: Option<ParentRun>,
    /// Its run-scope hooks and tool sources that are data.
    pub hooks: Vec<HookSpecRecord>,
}

impl Identity {
    /// The identity of `request`'s run `run_id`.
    pub(crate) fn of(run_id: &str, request: &WorkflowInput) -> Self {
        Identity {
            run_id: run_id.to_string(),
            agent: request.agent.clone(),
            session_id: request.session_id.clone(),
            user_id: request.user_id.clone(),
            tags: request.tags.clone(),
            metadata: request.metadata.clone(),
            parent: request.parent.clone(),
            hooks: request.hooks.clone(),
        }
    }

    /// The run as `machine` and `state` hold it, its history a delta from `ledger`.
    pub(crate) fn view(&self, machine: &RunMachine, state: &Value, ledger: &mut Ledger) -> RunView {
        RunView {
            snapshot: self.snapshot(machine, state, History::new()),
            history: ledger.delta(&machine.messages),
            root_run_id: self.parent.as_ref().map(|p| p.root_run_id.clone()),
        }
    }

    /// The run as `machine` and `state` hold it, with `messages` for its history.
    pub(crate) fn snapshot(
        &self,
        machine: &RunMachine,
        state: &Value,
        messages: History,
    ) -> RunSnapshot {
        RunSnapshot {
            version: SNAPSHOT_VERSION,
            run_id: self.run_id.clone(),
            parent_run_id: self.parent.as_ref().map(|p| p.run_id.clone()),
            agent: self.agent.clone(),
            session_id: self.session_id.clone(),
            user_id: self.user_id.clone(),
            tags: self.tags.clone(),
            metadata: self.metadata.clone(),
            messages,
            state: state.clone(),
            step: machine.step,
            usage: machine.usage,
            retried_usage: machine.retried_usage,
            model_calls: machine.model_calls,
            output_attempts: machine.output_attempts,
            pending_tool_calls: machine.pending_calls().to_vec(),
            settled_results: machine.settled.clone(),
            pending_batch: machine.batch.clone(),
            stop: None,
            output: None,
            error: None,
            hooks: self.hooks.clone(),
        }
    }
}

/// Some of a run's recorded events: those from position `from` on (positions count from the
/// run's first event; an execution a long run continued as keeps only its own).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventPage {
    /// The position of the first event.
    pub from: usize,
    /// The events.
    pub events: Vec<WireEvent>,
}

/// Decisions for a run's waiting calls, as a client sends them (the `decide` update).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct DecideRequest {
    /// One decision per waiting call.
    pub decisions: Vec<agentry_core::Decision>,
    /// When the client stops waiting for them, in milliseconds since the Unix epoch: a worker
    /// that takes them up later refuses them, so a decision its client gave up on never
    /// applies.
    #[serde(default)]
    pub not_after_ms: Option<u64>,
}

/// The memo key under which a run's workflow keeps its waiting calls, readable with no worker
/// running (a workflow's memo is kept by the server).
pub(crate) const PENDING_MEMO: &str = "agentry.pending";
