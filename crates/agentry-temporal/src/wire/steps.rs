//! Each step activity's input and outcome: beginning a run, opening a step, a tool call, ending
//! a step, a batch of tool hooks.

use super::*;
use crate::events::WireEvent;
use agentry_core::{
    Decision, Message, ModelResponse, PendingApproval, StopReason, ToolResult, Usage,
};
use agentry_runtime::effects::{BatchPlan, Folded, SubAgentOutcome, SubAgentRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub request: WorkflowInput,
}

/// A run started: its input after RunStart hooks, and its plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Begun {
    /// The input.
    pub input: agentry_core::Content,
    /// The plan.
    pub plan: RunPlan,
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
    /// The run events BeforeStep hooks sent (before the step's start, as in-process); the
    /// rest are the [`Done`]'s.
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

/// The end of a step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EndStepInput {
    /// The run.
    pub run: RunView,
    /// The first message MessageAdded hooks have not seen.
    pub report_from: usize,
    /// The step.
    pub step: u32,
    /// The tokens the step used, for its `StepFinished` event.
    #[serde(default)]
    pub usage: agentry_core::Usage,
    /// The final answer, when the step gave one: Stop hooks see it and may veto.
    pub final_output: Option<Value>,
}

/// The results of every call of a turn, for AfterToolBatch hooks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BatchInput {
    /// The run.
    pub run: RunView,
    /// The results, in call order.
    pub results: Vec<ToolResult>,
}
