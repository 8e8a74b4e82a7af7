//! What travels between a client, the workflow and the activities: the workflow's input and
//! result, and each activity's input and outcome. All of it is JSON in the run's history.

use crate::events::WireEvent;
use crate::ledger::{HistoryDelta, Ledger};
use agentry::effects::{BatchPlan, Folded, SubAgentOutcome, SubAgentRequest};
use agentry::hooks::HookSpecRecord;
use agentry_core::{
    Decision, History, Message, ModelResponse, PendingApproval, RunMachine, RunSnapshot,
    SNAPSHOT_VERSION, StopReason, ToolResult, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// The workflow's input: which agent, on what, with which run options and time limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RunRequest {
    /// The agent's name, as the worker registered it.
    pub agent: String,
    /// The input.
    pub input: String,
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

/// What a run decided, as the workflow returns it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum RunResult {
    /// The run ended (with an answer or another stop reason).
    Finished(Box<FinishedRun>),
    /// The run failed with this error.
    Failed(String),
    /// The run failed in a way that fails its parent run too (a hook's failure, the nesting
    /// limit), as in-process: hooks enforce policy, so a sub-agent cannot route around them.
    FailedWithParent(String),
    /// A sub-agent's run ended: how, and the events it recorded, which its parent records in
    /// its own stream as the in-process runtime streams them.
    Child {
        /// How it ended.
        result: Box<RunResult>,
        /// Its events.
        events: Vec<WireEvent>,
        /// The position of the first in its own list (its execution's first, for a run that
        /// continued as a new execution).
        #[serde(default)]
        from: usize,
    },
}

impl RunResult {
    /// The result without the events of a sub-agent's run.
    pub(crate) fn unwrapped(self) -> RunResult {
        match self {
            RunResult::Child { result, .. } => result.unwrapped(),
            other => other,
        }
    }
}

/// A run that ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FinishedRun {
    /// The output (a JSON string for text agents).
    pub output: Option<Value>,
    /// The text of the last model turn.
    pub text: String,
    /// The final state.
    pub state: Value,
    /// The whole history.
    pub messages: History,
    /// Tokens used.
    pub usage: Usage,
    /// Tokens of responses AfterModel hooks rejected.
    pub retried_usage: Usage,
    /// Steps taken.
    pub steps: u32,
    /// Model turns accepted.
    pub model_calls: u32,
    /// Why it stopped.
    pub stop: StopReason,
}

/// What one activity settles with: its result, or the error that fails the run (a hook's
/// failure, a model's after its retries). Recorded in history like a result, never retried.
pub(crate) type Effect<T> = Result<T, Failure>;

/// Why an effect failed the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failure {
    /// The error.
    pub error: String,
    /// A hook's failure or the nesting limit, which fail a sub-agent's parent run too.
    #[serde(default)]
    pub fails_parent: bool,
    /// Not a failure: a deadline a hook set during the effect passed, and interrupted it. The
    /// run stops with the deadline's reason.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

impl Failure {
    /// The failure `error` is.
    pub(crate) fn of(error: &agentry_core::Error) -> Self {
        Failure {
            error: error.to_string(),
            fails_parent: matches!(
                error,
                agentry_core::Error::Hook(_) | agentry_core::Error::DepthLimit { .. }
            ),
            deadline: None,
        }
    }

    /// The effect was interrupted when the deadline `deadline` passed.
    pub(crate) fn interrupted(deadline: Deadline) -> Self {
        Failure {
            error: format!("the run stopped: {}", deadline.stop),
            fails_parent: false,
            deadline: Some(deadline),
        }
    }

    /// A failure that is the run's own.
    pub(crate) fn own(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            fails_parent: false,
            deadline: None,
        }
    }
}

/// The plan of a run, decided once by the worker that starts it and recorded in its history:
/// the workflow decides with it, never with the worker's configuration of the moment.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RunPlan {
    /// The events some hook of the run wants (`Events` bits).
    pub wants: u64,
    /// The step limit.
    pub max_steps: u32,
    /// The structured output's schema, if any.
    pub output_schema: Option<Value>,
    /// How many invalid final answers are sent back.
    pub output_retries: u32,
    /// Whether a turn's calls run concurrently.
    pub parallel_tool_calls: bool,
}

/// The start of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BeginInput {
    /// The run id.
    pub run_id: String,
    /// The request.
    pub request: RunRequest,
}

/// A run started: its input and state after RunStart hooks, and its plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Begun {
    /// The input.
    pub input: String,
    /// The state.
    pub state: Value,
    /// The plan.
    pub plan: RunPlan,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while the effect ran
    /// (`RunContext::stop_at`), which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// What a step's activity needs: the run as it stands, from which message on MessageAdded
/// hooks have not seen the history, and the step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StepInput {
    /// The run.
    pub run: RunView,
    /// The first message MessageAdded hooks have not seen.
    pub report_from: usize,
    /// The step.
    pub step: u32,
}

/// How a step opened after BeforeStep hooks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Opening {
    /// On to the model.
    Go,
    /// Skipped.
    Skip,
    /// The run stops before the step.
    Stop(StopReason),
}

/// A model step: how it opened and, when it went on, the model turn.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ModelStep {
    /// How the step opened.
    pub opening: Opening,
    /// The run events BeforeStep hooks sent (before the step's start, as in-process).
    #[serde(default)]
    pub opened: Vec<WireEvent>,
    /// What the step's compaction folded before the model turn, if it did.
    #[serde(default)]
    pub folded: Option<Folded>,
    /// Messages AfterModel retries added before the turn.
    pub added: Vec<Message>,
    /// The run's usage before the turn (rejected responses included).
    pub usage: Usage,
    /// Its part spent on rejected responses.
    pub retried_usage: Usage,
    /// The turn, as hooks left it.
    pub response: Option<ModelResponse>,
    /// How BeforeToolBatch hooks want the turn's calls run, when some hook wants them.
    #[serde(default)]
    pub batch: Option<BatchPlan>,
    /// The state after the step's hooks.
    pub state: Value,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while the effect ran
    /// (`RunContext::stop_at`), which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// One tool call of the pending turn, with a person's decision when it waited for one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ToolInput {
    /// The run, its pending turn included.
    pub run: RunView,
    /// The call's index in the turn.
    pub index: usize,
    /// The call as it waited, and the decision.
    pub decided: Option<(PendingApproval, Decision)>,
}

/// How a tool call settled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Settled {
    /// With a result.
    Done(ToolResult),
    /// Waiting for a person.
    Pending(PendingApproval),
    /// Rejected; the run stops.
    Stop {
        /// The call's result.
        result: ToolResult,
        /// Why.
        reason: String,
    },
    /// A sub-agent call: the workflow runs it as a child workflow, then closes the call with
    /// [`SubAgentDone`].
    SubAgent(SubAgentRequest),
}

/// A sub-agent call to close with how its child run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SubAgentDone {
    /// The run, its pending turn included.
    pub run: RunView,
    /// The call's index in the turn.
    pub index: usize,
    /// The call as it was handed over.
    pub request: SubAgentRequest,
    /// How the child run ended.
    pub outcome: SubAgentOutcome,
}

/// A settled call and the state after it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ToolDone {
    /// How it settled.
    pub settled: Settled,
    /// The state after the call.
    pub state: Value,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while the effect ran
    /// (`RunContext::stop_at`), which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// The end of a step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EndStepInput {
    /// The run.
    pub run: RunView,
    /// The first message MessageAdded hooks have not seen.
    pub report_from: usize,
    /// The step.
    pub step: u32,
    /// The final answer, when the step gave one: Stop hooks see it and may veto.
    pub final_output: Option<Value>,
}

/// What the end of a step decided.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StepEnd {
    /// An AfterStep hook's stop.
    pub stop: Option<StopReason>,
    /// A Stop hook's veto of the final answer: the message the model gets.
    pub veto: Option<String>,
    /// The state after the hooks.
    pub state: Value,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while the effect ran
    /// (`RunContext::stop_at`), which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// The results of every call of a turn, for AfterToolBatch hooks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchInput {
    /// The run.
    pub run: RunView,
    /// The results, in call order.
    pub results: Vec<ToolResult>,
}

/// The results of a turn's calls as AfterToolBatch hooks left them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchDone {
    /// The results, in call order.
    pub results: Vec<ToolResult>,
    /// The state after the hooks.
    pub state: Value,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
    /// The earliest deadline a hook set on the run while the effect ran
    /// (`RunContext::stop_at`), which the workflow enforces.
    #[serde(default)]
    pub deadline: Option<Deadline>,
}

/// An activity's outcome that may carry a deadline a hook set on the run during the effect.
pub(crate) trait CarriesDeadline {
    /// The deadline, if one was set.
    fn deadline(&self) -> Option<&Deadline>;
}

impl<T: CarriesDeadline> CarriesDeadline for Effect<T> {
    fn deadline(&self) -> Option<&Deadline> {
        match self {
            Ok(done) => done.deadline(),
            Err(failure) => failure.deadline.as_ref(),
        }
    }
}

macro_rules! carries_deadline {
    ($($outcome:ty),*) => {$(
        impl CarriesDeadline for $outcome {
            fn deadline(&self) -> Option<&Deadline> {
                self.deadline.as_ref()
            }
        }
    )*};
}

carries_deadline!(Begun, ModelStep, ToolDone, StepEnd, BatchDone);

impl CarriesDeadline for Finish {
    /// The run ends: a deadline no longer matters.
    fn deadline(&self) -> Option<&Deadline> {
        None
    }
}

/// A deadline set on a run (`RunContext::stop_at`): when, in milliseconds since the Unix
/// epoch, and the stop it brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Deadline {
    /// When it passes, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The run's stop reason then.
    pub stop: StopReason,
}

impl Deadline {
    /// The deadline `at`, bringing `stop`.
    pub(crate) fn new(at: std::time::SystemTime, stop: StopReason) -> Self {
        let at_ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Deadline { at_ms, stop }
    }

    /// When it passes.
    pub(crate) fn at(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + Duration::from_millis(self.at_ms)
    }

    /// The earlier of `current` and `next` (the earliest deadline stands, as in-process).
    pub(crate) fn earliest(current: Option<Deadline>, next: Option<Deadline>) -> Option<Deadline> {
        match (current, next) {
            (Some(a), Some(b)) => Some(if b.at_ms < a.at_ms { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// How a run ends, for its last activity.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Ending {
    /// It stopped.
    Stopped {
        /// Why.
        stop: StopReason,
        /// The output.
        output: Option<Value>,
    },
    /// It failed (RunFailed hooks may recover).
    Failed(String),
}

/// The end of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FinishInput {
    /// The run.
    pub run: RunView,
    /// The first message MessageAdded hooks have not seen.
    pub report_from: usize,
    /// A stop reason Stop hooks have not seen yet.
    pub stop_event: Option<StopReason>,
    /// How it ends.
    pub ending: Ending,
}

/// How a run ended after its last hooks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Finish {
    /// Why it stopped.
    pub stop: StopReason,
    /// The output.
    pub output: Option<Value>,
    /// The final state.
    pub state: Value,
    /// The run events its effects sent.
    #[serde(default)]
    pub events: Vec<WireEvent>,
}

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
    pub(crate) fn of(run_id: &str, request: &RunRequest) -> Self {
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
