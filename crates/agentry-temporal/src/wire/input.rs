//! The workflow's input: the run request, its parent, what a continued run carries, where
//! activities run and the time limits.

use super::*;
use agentry_core::RunSnapshot;
use agentry_core::hooks::HookSpecRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// The workflow's input: which agent, on what, with which run options and time limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WorkflowInput {
    /// The agent's name, as the worker registered it.
    pub agent: String,
    /// The input.
    pub input: agentry_core::Content,
    /// The session id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The user id.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Metadata.
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
    /// The activities' time limits.
    pub limits: Limits,
    /// Where the run's activities run.
    #[serde(default)]
    pub placement: Placement,
    /// How many events the workflow's history may reach before the run continues as a new
    /// execution (between steps; Temporal's own suggestion is followed too).
    #[serde(default = "default_continue_after")]
    pub continue_after: u32,
    /// The run as the execution it continues left it.
    #[serde(default)]
    pub carried: Option<Box<Carried>>,
    /// The run, for a fork of another run: its history, state and step as that run's were at
    /// the step it is forked from (`Client::fork`). It starts from there (no RunStart hooks, no
    /// input) and records its own events from there on.
    #[serde(default)]
    pub forked: Option<Box<RunSnapshot>>,
    /// The run whose call started this one as a sub-agent (then `agent` is the sub-agent's
    /// path, `root/child`).
    #[serde(default)]
    pub parent: Option<ParentRun>,
    /// The run's run-scope hooks and tool sources that are data (`RunOptions::with_stored`,
    /// `RunOptions::with_stored_tools`), which the workers build again with their runtime's
    /// restorers. A sub-agent's run gets its parent's, as in-process.
    #[serde(default)]
    pub hooks: Vec<HookSpecRecord>,
}

/// The run above a sub-agent's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ParentRun {
    /// The parent run's id.
    pub run_id: String,
    /// The id of the run at the top of the tree.
    pub root_run_id: String,
}

/// 10,000 events: a few hundred steps, well within Temporal's history limits (a warning at
/// 10,240 events, a hard limit at 51,200 events or 50 MB).
pub(crate) const fn default_continue_after() -> u32 {
    10_000
}

/// What a run carries into the execution that continues it: all its state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Carried {
    /// The run: history, state, steps, usage.
    pub snapshot: RunSnapshot,
    /// Its plan.
    pub plan: RunPlan,
    /// How many messages MessageAdded hooks have seen.
    pub reported: usize,
    /// How many messages the last activity's worker keeps (the next delta's base).
    pub synced: usize,
    /// How many events the run recorded before (the position of the next one).
    #[serde(default)]
    pub events: usize,
    /// The deadline a hook set on the run, if one did.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// Where a run's activities run: scheduled by the server on any worker, or as local activities
/// on the worker that runs the run's workflow (see the crate docs for what each costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Every phase (model call, tool call, hooks-only phase) is an activity the server
    /// schedules on any worker: one round trip through the server each, heartbeated, retried on
    /// another worker when its worker dies. The default.
    #[default]
    Scheduled,
    /// The hooks-only phases (run start, step end, run end) run as local activities: on the
    /// workflow's worker, recorded in the history when its workflow task completes. Model and
    /// tool calls stay scheduled.
    LocalHooks,
    /// Every phase runs as a local activity: no round trip through the server per phase. A
    /// worker that dies takes with it what its current workflow task ran, which another worker
    /// runs again (tool calls with the same idempotency keys); local activities send no
    /// heartbeats, so a hung call is bounded by its time limit only. For short calls.
    Local,
}

impl Placement {
    /// Whether a phase runs as a local activity: `hooks_only` for the phases that run hooks and
    /// nothing else.
    pub fn is_local(self, hooks_only: bool) -> bool {
        match self {
            Placement::Scheduled => false,
            Placement::LocalHooks => hooks_only,
            Placement::Local => true,
        }
    }
}

/// The time limits of a run's activities (see [`Limits::default`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// How long an activity may go without a heartbeat (a worker that died mid-call is noticed
    /// after this, and the call is retried on another). Activities heartbeat every second.
    pub heartbeat: Duration,
    /// How long one attempt at a model step may take (hooks and the model turn).
    pub model_step: Duration,
    /// How long one attempt at a tool call may take (hooks and the tool).
    pub tool_call: Duration,
    /// How long one attempt at a phase of hooks only may take (run start, step end, run end).
    pub hooks: Duration,
}

impl Default for Limits {
    /// Heartbeats within 10 s; a model step 15 min, a tool call 10 min, hooks 5 min. Keep these
    /// above the worker runtime's own model turn, tool and hook timeouts, which fire first with
    /// errors that name them.
    fn default() -> Self {
        Limits {
            heartbeat: Duration::from_secs(10),
            model_step: Duration::from_secs(15 * 60),
            tool_call: Duration::from_secs(10 * 60),
            hooks: Duration::from_secs(5 * 60),
        }
    }
}
