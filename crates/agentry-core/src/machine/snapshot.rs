//! What a checkpoint stores: everything a run needs to continue, serializable.

use crate::{History, StopReason, ToolCall, ToolResult, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version of [`RunSnapshot`].
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a run needs to continue, serializable: what a checkpoint stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSnapshot {
    /// The format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// The run id.
    pub run_id: String,
    /// The parent run, for sub-agent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The agent's name.
    pub agent: String,
    /// The session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// The history.
    pub messages: History,
    /// The state, as JSON.
    pub state: Value,
    /// Steps completed.
    pub step: u32,
    /// Tokens used, by every model call (responses hooks rejected included).
    pub usage: Usage,
    /// The part of `usage` spent on responses that AfterModel hooks rejected (asked to retry).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub retried_usage: Usage,
    /// Model turns accepted.
    pub model_calls: u32,
    /// Invalid final answers sent back so far.
    pub output_attempts: u32,
    /// Tool calls the model asked for whose results are not in the history yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tool_calls: Vec<ToolCall>,
    /// Results of pending calls that already settled (the others wait for approval, or were in
    /// flight when the run stopped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled_results: Vec<ToolResult>,
    /// What BeforeToolBatch hooks decided for the pending calls, when they ran on them: a
    /// resumed turn follows it (they run once per turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_batch: Option<crate::hooks::BatchPlan>,
    /// Set once the run has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// The output, once the run has ended with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Set when the run failed after this checkpoint: the error. The run can be resumed from
    /// here (once what failed is fixed); resuming clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's hooks and tool sources that are data (see
    /// [`StoredHook`](crate::hooks::StoredHook), [`StoredToolSource`](crate::StoredToolSource)),
    /// built again when it resumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::hooks::HookSpecRecord>,
}

impl RunSnapshot {
    /// The calls of the pending turn whose outcome was never recorded, which resuming the run
    /// runs again: calls under way when the run was killed or cancelled. What they did before
    /// (a file written, a command run) may be done twice. None for a run that waits for
    /// approval (its waiting calls never ran) or that ended.
    pub fn unsettled_calls(&self) -> Vec<&ToolCall> {
        match &self.stop {
            None | Some(StopReason::Cancelled) => self
                .pending_tool_calls
                .iter()
                .filter(|c| !self.settled_results.iter().any(|r| r.call_id == c.id))
                .collect(),
            Some(_) => Vec::new(),
        }
    }

    /// The snapshot of run `run_id` of `agent` before anything happened in it: no history, no
    /// state, no step. (What an engine that drives runs itself opens a new run's effects with.)
    pub fn new(run_id: impl Into<String>, agent: impl Into<String>) -> Self {
        RunSnapshot {
            version: SNAPSHOT_VERSION,
            run_id: run_id.into(),
            parent_run_id: None,
            agent: agent.into(),
            session_id: None,
            user_id: None,
            tags: Vec::new(),
            metadata: Default::default(),
            messages: History::new(),
            state: Value::Null,
            step: 0,
            usage: Usage::default(),
            retried_usage: Usage::default(),
            model_calls: 0,
            output_attempts: 0,
            pending_tool_calls: Vec::new(),
            settled_results: Vec::new(),
            pending_batch: None,
            stop: None,
            output: None,
            error: None,
            hooks: Vec::new(),
        }
    }
}
