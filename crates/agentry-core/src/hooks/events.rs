//! The typed payloads of hook events. What a hook may change is a public field or a method.

use super::{EventKind, HookName};
use crate::{
    Error, Message, ModelRequest, ModelResponse, StateSource, StopReason, ToolCallRef, ToolInfo,
    ToolResult, Usage,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub use super::batch_events::{AfterToolBatch, BatchPlan, BeforeToolBatch};
pub use super::context_events::{AfterCompact, BeforeCompact, CompactError};
pub use super::human_events::{ApprovalRequested, ApprovalResolved, Resolver, StoppedByHuman};

/// Whether a hook took a decision on the event (block, mock, skip, stop, recover, ...).
///
/// Every hook of the event still sees it: on forward events the first decision stands and later
/// hooks see it read-only; on reverse (onion) events an outer hook may replace an inner hook's
/// decision, and the outermost one stands (see [`Hooks::dispatch`](super::Hooks::dispatch)).
pub trait Decides {
    /// True once a decision was taken.
    fn decided(&self) -> bool {
        false
    }
    /// How many decisions were taken on the event so far (each call of a decision method counts
    /// one): the engine tells from it which hook took the decision that stands.
    fn marks(&self) -> u32 {
        0
    }
}

/// A run starts. Hooks may rewrite the input; the state can be changed through the context.
#[derive(Clone, Debug)]
pub struct RunStart {
    /// The user input that starts the run.
    pub input: String,
}
impl Decides for RunStart {}

/// A run ended (not after a failure: see [`RunError`]).
#[derive(Clone, Debug)]
pub struct RunEnd {
    /// Why it ended.
    stop: StopReason,
    /// The output (text as a JSON string, or the structured output), when there is one.
    output: Option<Value>,
    /// Tokens used by the run.
    usage: Usage,
    /// Steps taken.
    steps: u32,
}
impl RunEnd {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(stop: StopReason, output: Option<Value>, usage: Usage, steps: u32) -> Self {
        RunEnd {
            stop,
            output,
            usage,
            steps,
        }
    }
    /// Why it ended.
    pub fn stop(&self) -> &StopReason {
        &self.stop
    }
    /// The output (text as a JSON string, or the structured output), when there is one.
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }
    /// Tokens used by the run.
    pub fn usage(&self) -> Usage {
        self.usage
    }
    /// Steps taken.
    pub fn steps(&self) -> u32 {
        self.steps
    }
}
impl Decides for RunEnd {}

/// A run failed. A hook may recover with an output; the run then ends normally.
#[derive(Clone, Debug)]
pub struct RunError {
    /// The failure.
    error: Arc<Error>,
    recovery: Option<Value>,
    marks: u32,
}
impl RunError {
    /// The failure.
    pub fn error(&self) -> &Arc<Error> {
        &self.error
    }
}
impl RunError {
    /// A new event.
    pub fn new(error: Arc<Error>) -> Self {
        RunError {
            error,
            recovery: None,
            marks: 0,
        }
    }
    /// Recovers the run with this output (text, or JSON for a structured output type).
    pub fn recover(&mut self, output: impl Into<Value>) {
        self.recovery = Some(output.into());
        self.marks += 1;
    }
    /// The recovery output, if a hook gave one.
    pub fn recovery(&self) -> Option<&Value> {
        self.recovery.as_ref()
    }
}
impl Decides for RunError {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// What a BeforeStep hook decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepDecision {
    /// Skip this step: no model call; the next step follows.
    Skip,
    /// Stop the run with this reason.
    Stop(String),
    /// Stop the run with this typed reason (guards use it: [`StopReason::Limit`]).
    StopWith(StopReason),
}

/// A step is about to start. Hooks may skip it or stop the run.
#[derive(Clone, Debug)]
pub struct BeforeStep {
    /// The step number (1-based).
    step: u32,
    decision: Option<StepDecision>,
    marks: u32,
}
impl BeforeStep {
    /// The step number (1-based).
    pub fn step(&self) -> u32 {
        self.step
    }
}
impl BeforeStep {
    /// A new event.
    pub fn new(step: u32) -> Self {
        BeforeStep {
            step,
            decision: None,
            marks: 0,
        }
    }
    /// Skips this step.
    pub fn skip(&mut self) {
        self.decision = Some(StepDecision::Skip);
        self.marks += 1;
    }
    /// Stops the run.
    pub fn stop(&mut self, reason: impl Into<String>) {
        self.decision = Some(StepDecision::Stop(reason.into()));
        self.marks += 1;
    }
    /// Stops the run with a typed reason.
    pub fn stop_with(&mut self, reason: StopReason) {
        self.decision = Some(StepDecision::StopWith(reason));
        self.marks += 1;
    }
    /// The decision, if a hook took one.
    pub fn decision(&self) -> Option<&StepDecision> {
        self.decision.as_ref()
    }
}
impl Decides for BeforeStep {
    fn decided(&self) -> bool {
        self.decision.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A step ended. Hooks may stop the run after it.
#[derive(Clone, Debug)]
pub struct AfterStep {
    /// The step number.
    step: u32,
    /// Tokens used by the run so far.
    usage: Usage,
    /// Model calls made by the run so far.
    model_calls: u32,
    stop: Option<StepDecision>,
    marks: u32,
}
impl AfterStep {
    /// The step number.
    pub fn step(&self) -> u32 {
        self.step
    }
    /// Tokens used by the run so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }
    /// Model calls made by the run so far.
    pub fn model_calls(&self) -> u32 {
        self.model_calls
    }
}
impl AfterStep {
    /// A new event.
    pub fn new(step: u32, usage: Usage, model_calls: u32) -> Self {
        AfterStep {
            step,
            usage,
            model_calls,
            stop: None,
            marks: 0,
        }
    }
    /// Stops the run after this step.
    pub fn stop(&mut self, reason: impl Into<String>) {
        self.stop = Some(StepDecision::Stop(reason.into()));
        self.marks += 1;
    }
    /// Stops the run after this step, with a typed reason.
    pub fn stop_with(&mut self, reason: StopReason) {
        self.stop = Some(StepDecision::StopWith(reason));
        self.marks += 1;
    }
    /// The stop reason, if a hook gave one as text.
    pub fn stop_reason(&self) -> Option<&str> {
        match &self.stop {
            Some(StepDecision::Stop(reason)) => Some(reason),
            _ => None,
        }
    }
    /// The stop a hook decided, if one did ([`StepDecision::Stop`] or [`StepDecision::StopWith`]).
    pub fn stop_decision(&self) -> Option<&StepDecision> {
        self.stop.as_ref()
    }
}
impl Decides for AfterStep {
    fn decided(&self) -> bool {
        self.stop.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The run is about to stop. A hook may veto a natural stop (a final answer) by adding a message;
/// the run then goes on with that message as the next user turn.
#[derive(Clone, Debug)]
pub struct Stop {
    /// Why the run is stopping.
    reason: StopReason,
    /// The last step.
    step: u32,
    /// The final answer, when the run stops with one (text as a JSON string, a structured
    /// output as its JSON value).
    output: Option<Value>,
    veto: Option<String>,
    marks: u32,
}
impl Stop {
    /// Why the run is stopping.
    pub fn reason(&self) -> &StopReason {
        &self.reason
    }
    /// The last step.
    pub fn step(&self) -> u32 {
        self.step
    }
    /// The final answer, when the run stops with one (text as a JSON string, a structured
    /// output as its JSON value).
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }
}
impl Stop {
    /// A new event.
    pub fn new(reason: StopReason, step: u32) -> Self {
        Stop {
            reason,
            step,
            output: None,
            veto: None,
            marks: 0,
        }
    }
    /// A new event for a run stopping with the final answer `output`.
    pub fn with_output(reason: StopReason, step: u32, output: Value) -> Self {
        Stop {
            output: Some(output),
            ..Stop::new(reason, step)
        }
    }
    /// Vetoes a natural stop, sending `message` to the model. Ignored for other stops (step
    /// limits, hook stops, cancellation), which cannot be vetoed.
    pub fn veto(&mut self, message: impl Into<String>) {
        if self.reason.is_natural() {
            self.veto = Some(message.into());
            self.marks += 1;
        }
    }
    /// The veto message, if a hook vetoed.
    pub fn vetoed(&self) -> Option<&str> {
        self.veto.as_deref()
    }
}
impl Decides for Stop {
    fn decided(&self) -> bool {
        self.veto.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A model call is about to be made. Hooks may rewrite the request or answer it themselves.
#[derive(Clone, Debug)]
pub struct BeforeModel {
    /// The request (system prompt, messages, tools, parameters).
    pub request: ModelRequest,
    response: Option<Box<ModelResponse>>,
    marks: u32,
}
impl BeforeModel {
    /// A new event.
    pub fn new(request: ModelRequest) -> Self {
        BeforeModel {
            request,
            response: None,
            marks: 0,
        }
    }
    /// Answers the call without calling the model.
    pub fn respond(&mut self, response: ModelResponse) {
        self.response = Some(Box::new(response));
        self.marks += 1;
    }
    /// The answer a hook gave, if any.
    pub fn response(&self) -> Option<&ModelResponse> {
        self.response.as_deref()
    }
    /// Splits the event into the request and the hook's answer.
    pub fn into_parts(self) -> (ModelRequest, Option<ModelResponse>) {
        (self.request, self.response.map(|r| *r))
    }
}
impl Decides for BeforeModel {
    fn decided(&self) -> bool {
        self.response.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A model call returned. Hooks may rewrite the response or ask for a retry with feedback.
#[derive(Clone, Debug)]
pub struct AfterModel {
    /// The response.
    pub response: ModelResponse,
    /// The name of the model that answered (`Model::name`; empty when a BeforeModel hook
    /// answered in its place).
    model: Arc<str>,
    retry: Option<String>,
    marks: u32,
}
impl AfterModel {
    /// The name of the model that answered (`Model::name`; empty when a BeforeModel hook
    /// answered in its place).
    pub fn model(&self) -> &str {
        &self.model
    }
}
impl AfterModel {
    /// A new event.
    pub fn new(response: ModelResponse) -> Self {
        AfterModel::from_model("", response)
    }
    /// A new event for the answer of the model named `model`.
    pub fn from_model(model: impl Into<Arc<str>>, response: ModelResponse) -> Self {
        AfterModel {
            response,
            model: model.into(),
            retry: None,
            marks: 0,
        }
    }
    /// Discards this response's tool calls and asks the model again, with `feedback` as a user
    /// message after its text.
    pub fn retry(&mut self, feedback: impl Into<String>) {
        self.retry = Some(feedback.into());
        self.marks += 1;
    }
    /// The feedback, if a hook asked for a retry.
    pub fn retry_feedback(&self) -> Option<&str> {
        self.retry.as_deref()
    }
}
impl Decides for AfterModel {
    fn decided(&self) -> bool {
        self.retry.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The model streamed a piece of text. Hooks observe it, may rewrite it (only what they let
/// through is recorded and streamed), or abort the stream (the piece is then dropped).
#[derive(Clone, Debug)]
pub struct TextDelta {
    /// The piece of text; a hook may change it.
    pub text: String,
    abort: Option<String>,
    marks: u32,
}
impl TextDelta {
    /// A new event.
    pub fn new(text: String) -> Self {
        TextDelta {
            text,
            abort: None,
            marks: 0,
        }
    }
    /// Aborts the stream; the run stops with [`StopReason::Aborted`] unless an AfterModel hook
    /// asks for a retry.
    pub fn abort(&mut self, reason: impl Into<String>) {
        self.abort = Some(reason.into());
        self.marks += 1;
    }
    /// The abort reason, if a hook aborted.
    pub fn aborted(&self) -> Option<&str> {
        self.abort.as_deref()
    }
}
impl Decides for TextDelta {
    fn decided(&self) -> bool {
        self.abort.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The model streamed a piece of reasoning. Hooks observe it, may rewrite it, or abort the
/// stream, as for [`TextDelta`].
#[derive(Clone, Debug)]
pub struct Thinking {
    /// The piece of reasoning.
    pub text: String,
    abort: Option<String>,
    marks: u32,
}
impl Thinking {
    /// A new event.
    pub fn new(text: String) -> Self {
        Thinking {
            text,
            abort: None,
            marks: 0,
        }
    }
    /// Aborts the stream, like [`TextDelta::abort`].
    pub fn abort(&mut self, reason: impl Into<String>) {
        self.abort = Some(reason.into());
        self.marks += 1;
    }
    /// The abort reason, if a hook aborted.
    pub fn aborted(&self) -> Option<&str> {
        self.abort.as_deref()
    }
}
impl Decides for Thinking {
    fn decided(&self) -> bool {
        self.abort.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// What a BeforeTool hook decided instead of letting the tool run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolDecision {
    /// The call is blocked; the model sees the reason as an error result.
    Block(String),
    /// The call is answered with this content; the tool never runs and the result is flagged
    /// `mocked`.
    Mock(String),
    /// The call waits for a person's approval (or an ApprovalRequested hook's decision); the
    /// reason is shown to them.
    NeedsApproval(String),
}

/// A tool call is about to run. Hooks may rewrite the input, block the call, or answer it with a
/// mock. The first decision stands; the hooks after it see the decided event read-only.
#[derive(Clone, Debug)]
pub struct BeforeTool {
    call: ToolCallRef,
    /// The input the tool will receive (validated against its schema after the hooks).
    pub input: Value,
    decision: Option<ToolDecision>,
    marks: u32,
    approved: bool,
    info: Option<Arc<ToolInfo>>,
}
impl BeforeTool {
    /// A new event for a call given by id and tool name.
    pub fn new(call_id: impl Into<Arc<str>>, name: impl Into<Arc<str>>, input: Value) -> Self {
        BeforeTool::for_call(ToolCallRef::named(call_id, name), input)
    }
    /// A new event for a call (runtimes use this: it copies nothing).
    pub fn for_call(call: ToolCallRef, input: Value) -> Self {
        BeforeTool {
            call,
            input,
            decision: None,
            marks: 0,
            approved: false,
            info: None,
        }
    }
    /// Sets what the tool declares about itself (runtimes set it from [`Tool::info`](crate::Tool::info)).
    pub fn with_info(mut self, info: Option<Arc<ToolInfo>>) -> Self {
        self.info = info;
        self
    }
    /// What the tool declares about itself (its source, its annotations), when it does.
    pub fn tool_info(&self) -> Option<&ToolInfo> {
        self.info.as_deref()
    }
    /// Where the tool comes from (the name of the MCP server that serves it), when it says.
    pub fn source(&self) -> Option<&str> {
        self.info.as_deref().and_then(|i| i.source.as_deref())
    }
    /// Marks the call as approved by a person (runtimes use this when a run resumes with the
    /// call approved): [`require_approval`](Self::require_approval) is then ignored.
    pub fn approved(mut self) -> Self {
        self.approved = true;
        self
    }
    /// True when a person already approved this call.
    pub fn is_approved(&self) -> bool {
        self.approved
    }
    /// Pauses the run until a person (or an ApprovalRequested hook) decides on this call;
    /// `reason` is shown to them. Ignored for a call that was already approved.
    pub fn require_approval(&mut self, reason: impl Into<String>) {
        if !self.approved {
            self.decision = Some(ToolDecision::NeedsApproval(reason.into()));
            self.marks += 1;
        }
    }
    /// The call id.
    pub fn call_id(&self) -> &str {
        self.call.id()
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.call.name()
    }
    /// Blocks the call with a reason the model sees.
    pub fn block(&mut self, reason: impl Into<String>) {
        self.decision = Some(ToolDecision::Block(reason.into()));
        self.marks += 1;
    }
    /// Answers the call with `content`; the tool does not run.
    pub fn mock(&mut self, content: impl Into<String>) {
        self.decision = Some(ToolDecision::Mock(content.into()));
        self.marks += 1;
    }
    /// The decision, if a hook took one.
    pub fn decision(&self) -> Option<&ToolDecision> {
        self.decision.as_ref()
    }
    /// Takes the decision and the input (runtimes use this once the hooks ran).
    pub fn into_parts(self) -> (Option<ToolDecision>, Value) {
        (self.decision, self.input)
    }
    /// True when a hook blocked the call.
    pub fn is_blocked(&self) -> bool {
        matches!(self.decision, Some(ToolDecision::Block(_)))
    }
}
impl Decides for BeforeTool {
    fn decided(&self) -> bool {
        self.decision.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A tool call returned (or was blocked, mocked or rejected). Hooks may rewrite what the model
/// sees (`content`, `is_error`); which call it answers (its id and tool name) cannot change.
#[derive(Clone, Debug)]
pub struct AfterTool {
    call_id: String,
    name: String,
    input: Value,
    /// The content the model will see.
    pub content: String,
    /// True when the content reports a failure (the model is told it is an error).
    pub is_error: bool,
    mocked: bool,
    info: Option<Arc<ToolInfo>>,
}
impl AfterTool {
    /// A new event for `result`, the result of a call whose tool received `input` (runtimes
    /// create these; the result's call id and tool name become the event's identity).
    pub fn new(input: Value, result: ToolResult) -> Self {
        AfterTool {
            call_id: result.call_id,
            name: result.name,
            input,
            content: result.content,
            is_error: result.is_error,
            mocked: result.mocked,
            info: None,
        }
    }
    /// Sets what the tool declares about itself (runtimes set it from [`Tool::info`](crate::Tool::info)).
    pub fn with_info(mut self, info: Option<Arc<ToolInfo>>) -> Self {
        self.info = info;
        self
    }
    /// What the tool declares about itself (its source, its annotations), when it does.
    pub fn tool_info(&self) -> Option<&ToolInfo> {
        self.info.as_deref()
    }
    /// Where the tool comes from (the name of the MCP server that serves it), when it says.
    pub fn source(&self) -> Option<&str> {
        self.info.as_deref().and_then(|i| i.source.as_deref())
    }
    /// The id of the call this answers.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The input the tool received.
    pub fn input(&self) -> &Value {
        &self.input
    }
    /// True when a hook answered the call and the tool never ran.
    pub fn mocked(&self) -> bool {
        self.mocked
    }
    /// The result as the model will see it.
    pub fn result(&self) -> ToolResult {
        ToolResult {
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            content: self.content.clone(),
            is_error: self.is_error,
            mocked: self.mocked,
        }
    }
    /// The result as the model will see it (runtimes take it once the hooks ran).
    pub fn into_result(self) -> ToolResult {
        ToolResult {
            call_id: self.call_id,
            name: self.name,
            content: self.content,
            is_error: self.is_error,
            mocked: self.mocked,
        }
    }
}
impl Decides for AfterTool {}

/// A tool call failed (an error or a panic). A hook may recover with a result.
#[derive(Clone, Debug)]
pub struct ToolError {
    call: ToolCallRef,
    /// The input the tool received.
    input: Value,
    /// What went wrong.
    error: String,
    recovery: Option<String>,
    rewritten: Option<String>,
    marks: u32,
    info: Option<Arc<ToolInfo>>,
}
impl ToolError {
    /// The input the tool received.
    pub fn input(&self) -> &Value {
        &self.input
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
}
impl ToolError {
    /// A new event for a call given by id and tool name.
    pub fn new(
        call_id: impl Into<Arc<str>>,
        name: impl Into<Arc<str>>,
        input: Value,
        error: String,
    ) -> Self {
        ToolError::for_call(ToolCallRef::named(call_id, name), input, error)
    }
    /// A new event for a call (runtimes use this: it copies nothing).
    pub fn for_call(call: ToolCallRef, input: Value, error: String) -> Self {
        ToolError {
            call,
            input,
            error,
            recovery: None,
            rewritten: None,
            marks: 0,
            info: None,
        }
    }
    /// Sets what the tool declares about itself (runtimes set it from [`Tool::info`](crate::Tool::info)).
    pub fn with_info(mut self, info: Option<Arc<ToolInfo>>) -> Self {
        self.info = info;
        self
    }
    /// What the tool declares about itself (its source, its annotations), when it does.
    pub fn tool_info(&self) -> Option<&ToolInfo> {
        self.info.as_deref()
    }
    /// Where the tool comes from (the name of the MCP server that serves it), when it says.
    pub fn source(&self) -> Option<&str> {
        self.info.as_deref().and_then(|i| i.source.as_deref())
    }
    /// The call id.
    pub fn call_id(&self) -> &str {
        self.call.id()
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.call.name()
    }
    /// Recovers with this content, which the model sees as a successful result.
    pub fn recover(&mut self, content: impl Into<String>) {
        self.recovery = Some(content.into());
        self.marks += 1;
    }
    /// The recovery content, if a hook gave one.
    pub fn recovery(&self) -> Option<&str> {
        self.recovery.as_deref()
    }
    /// Changes the error the model sees when no hook recovers (a friendlier or safer message);
    /// [`error`](Self::error) stays what happened, for the hooks after this one.
    pub fn rewrite_error(&mut self, message: impl Into<String>) {
        self.rewritten = Some(message.into());
    }
    /// The error as a hook rewrote it, if one did.
    pub fn rewritten_error(&self) -> Option<&str> {
        self.rewritten.as_deref()
    }
}
impl Decides for ToolError {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A sub-agent is about to run. Hooks may rewrite its input or block it.
#[derive(Clone, Debug)]
pub struct BeforeSubAgent {
    /// The sub-agent's name.
    agent: String,
    /// The tool call that asked for it.
    call_id: String,
    /// Its input.
    pub input: String,
    blocked: Option<String>,
    marks: u32,
}
impl BeforeSubAgent {
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// The tool call that asked for it.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}
impl BeforeSubAgent {
    /// A new event.
    pub fn new(agent: String, call_id: String, input: String) -> Self {
        BeforeSubAgent {
            agent,
            call_id,
            input,
            blocked: None,
            marks: 0,
        }
    }
    /// Blocks the sub-agent; the parent model sees the reason.
    pub fn block(&mut self, reason: impl Into<String>) {
        self.blocked = Some(reason.into());
        self.marks += 1;
    }
    /// The block reason, if a hook blocked.
    pub fn blocked(&self) -> Option<&str> {
        self.blocked.as_deref()
    }
}
impl Decides for BeforeSubAgent {
    fn decided(&self) -> bool {
        self.blocked.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A sub-agent returned. Hooks may rewrite the output the parent sees.
#[derive(Clone, Debug)]
pub struct AfterSubAgent {
    /// The sub-agent's name.
    agent: String,
    /// The child run's id.
    run_id: String,
    /// Its input.
    input: String,
    /// Its output, as the parent model will see it.
    pub output: String,
}
impl AfterSubAgent {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(agent: String, run_id: String, input: String, output: String) -> Self {
        AfterSubAgent {
            agent,
            run_id,
            input,
            output,
        }
    }
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// The child run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// Its input.
    pub fn input(&self) -> &str {
        &self.input
    }
}
impl Decides for AfterSubAgent {}

/// A sub-agent failed. A hook may recover with an output.
#[derive(Clone, Debug)]
pub struct SubAgentError {
    /// The sub-agent's name.
    agent: String,
    /// Its input.
    input: String,
    /// What went wrong.
    error: String,
    recovery: Option<String>,
    rewritten: Option<String>,
    marks: u32,
}
impl SubAgentError {
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// Its input.
    pub fn input(&self) -> &str {
        &self.input
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
}
impl SubAgentError {
    /// A new event.
    pub fn new(agent: String, input: String, error: String) -> Self {
        SubAgentError {
            agent,
            input,
            error,
            recovery: None,
            rewritten: None,
            marks: 0,
        }
    }
    /// Recovers with this output.
    pub fn recover(&mut self, output: impl Into<String>) {
        self.recovery = Some(output.into());
        self.marks += 1;
    }
    /// The recovery output, if a hook gave one.
    pub fn recovery(&self) -> Option<&str> {
        self.recovery.as_deref()
    }
    /// Changes the error the model sees when no hook recovers (a friendlier or safer message);
    /// [`error`](Self::error) stays what happened, for the hooks after this one.
    pub fn rewrite_error(&mut self, message: impl Into<String>) {
        self.rewritten = Some(message.into());
    }
    /// The error as a hook rewrote it, if one did.
    pub fn rewritten_error(&self) -> Option<&str> {
        self.rewritten.as_deref()
    }
}
impl Decides for SubAgentError {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The state changed.
#[derive(Clone, Debug)]
pub struct StateChange {
    /// The state before.
    previous: Value,
    /// The state after.
    current: Value,
    /// Who changed it.
    source: StateSource,
}
impl StateChange {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(previous: Value, current: Value, source: StateSource) -> Self {
        StateChange {
            previous,
            current,
            source,
        }
    }
    /// The state before.
    pub fn previous(&self) -> &Value {
        &self.previous
    }
    /// The state after.
    pub fn current(&self) -> &Value {
        &self.current
    }
    /// Who changed it.
    pub fn source(&self) -> &StateSource {
        &self.source
    }
}
impl StateChange {
    /// The change as an RFC 6902 JSON Patch.
    pub fn patch(&self) -> json_patch::Patch {
        json_patch::diff(&self.previous, &self.current)
    }
}
impl Decides for StateChange {}

/// A message was added to the history.
#[derive(Clone, Debug)]
pub struct MessageAdded {
    /// The message.
    message: Arc<Message>,
}
impl MessageAdded {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(message: Arc<Message>) -> Self {
        MessageAdded { message }
    }
    /// The message.
    pub fn message(&self) -> &Arc<Message> {
        &self.message
    }
}
impl Decides for MessageAdded {}

/// A tool or hook emitted a custom event.
#[derive(Clone, Debug)]
pub struct Custom {
    /// The event name.
    name: String,
    /// Its data.
    data: Value,
}
impl Custom {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(name: String, data: Value) -> Self {
        Custom { name, data }
    }
    /// The event name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its data.
    pub fn data(&self) -> &Value {
        &self.data
    }
}
impl Decides for Custom {}

/// A hook is about to run.
#[derive(Clone, Debug)]
pub struct HookStarted {
    /// The hook's name.
    hook: HookName,
    /// The event it handles.
    event: EventKind,
}
impl HookStarted {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(hook: HookName, event: EventKind) -> Self {
        HookStarted { hook, event }
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handles.
    pub fn event(&self) -> EventKind {
        self.event
    }
}
impl Decides for HookStarted {}

/// A hook finished.
#[derive(Clone, Debug)]
pub struct HookFinished {
    /// The hook's name.
    hook: HookName,
    /// The event it handled.
    event: EventKind,
    /// How long it took.
    duration: Duration,
}
impl HookFinished {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(hook: HookName, event: EventKind, duration: Duration) -> Self {
        HookFinished {
            hook,
            event,
            duration,
        }
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handled.
    pub fn event(&self) -> EventKind {
        self.event
    }
    /// How long it took.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}
impl Decides for HookFinished {}

/// A hook failed (an error, a panic or a timeout).
#[derive(Clone, Debug)]
pub struct HookFailed {
    /// The hook's name.
    hook: HookName,
    /// The event it handled.
    event: EventKind,
    /// How long it ran.
    duration: Duration,
    /// What went wrong.
    error: String,
    /// True when the hook is advisory and the run goes on.
    advisory: bool,
}
impl HookFailed {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hook: HookName,
        event: EventKind,
        duration: Duration,
        error: String,
        advisory: bool,
    ) -> Self {
        HookFailed {
            hook,
            event,
            duration,
            error,
            advisory,
        }
    }
    /// The hook's name.
    pub fn hook(&self) -> &HookName {
        &self.hook
    }
    /// The event it handled.
    pub fn event(&self) -> EventKind {
        self.event
    }
    /// How long it ran.
    pub fn duration(&self) -> Duration {
        self.duration
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
    /// True when the hook is advisory and the run goes on.
    pub fn advisory(&self) -> bool {
        self.advisory
    }
}
impl Decides for HookFailed {}
