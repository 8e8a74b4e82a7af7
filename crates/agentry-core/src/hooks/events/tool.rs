//! The `tool` group: BeforeTool, AfterTool, ToolFailed.

use super::{Decides, form};
use crate::{Content, ToolCallRef, ToolInfo, ToolResult};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What a BeforeTool hook decided instead of letting the tool run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolDecision {
    /// The call is blocked; the model sees the reason as an error result.
    Block(String),
    /// The call is answered with this content; the tool never runs and the result is flagged
    /// `mocked`.
    Mock(Content),
    /// The call waits for a person's approval (or an ApprovalRequested hook's decision); the
    /// reason is shown to them.
    NeedsApproval(String),
}

/// A tool call is about to run. Hooks may rewrite the input, block the call, answer it with a
/// mock, ask a person to approve it, or allow it.
///
/// A block or a mock is final: the hooks after it see the decided event read-only. A request
/// for approval is not: a later hook may still block (or mock) the call, so a hook that forbids a
/// call is never hidden by one that asked about it. [`allow`](Self::allow) is no decision at all:
/// it lets the call run without asking a person when only the tool itself wants approval
/// ([`Tool::needs_approval`](crate::Tool::needs_approval)), while any hook's
/// [`require_approval`](Self::require_approval) or [`block`](Self::block) still applies:
///
/// | hooks | tool without approval | tool that needs approval |
/// |---|---|---|
/// | nothing | runs | asks |
/// | `allow` | runs | runs |
/// | `require_approval` (with or without `allow`) | asks | asks |
/// | `block` (with anything) | blocked | blocked |
#[derive(Clone, Debug, Serialize)]
pub struct BeforeTool {
    #[serde(flatten, serialize_with = "form::call")]
    call: ToolCallRef,
    /// The input the tool will receive (validated against its schema after the hooks).
    #[serde(rename = "tool_input")]
    pub input: Value,
    #[serde(skip)]
    decision: Option<ToolDecision>,
    #[serde(skip)]
    marks: u32,
    #[serde(skip)]
    approved: bool,
    #[serde(skip)]
    allowed: Option<String>,
    #[serde(skip)]
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
            allowed: None,
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
    /// `reason` is shown to them. Ignored for a call that was already approved; when several
    /// hooks ask, the first one's reason is shown. A later hook may still block the call.
    pub fn require_approval(&mut self, reason: impl Into<String>) {
        if !self.approved && self.decision.is_none() {
            self.decision = Some(ToolDecision::NeedsApproval(reason.into()));
            self.marks += 1;
        }
    }
    /// Lets the call run without asking a person when only the tool itself wants approval
    /// ([`Tool::needs_approval`](crate::Tool::needs_approval)); `reason` is recorded as the
    /// decision (a `HookDecision` run event, `allowed`). Not a decision the hooks after this one
    /// must respect: a hook that requires approval or blocks the call still does (see the
    /// table on [`BeforeTool`]). When several hooks allow, the first one's reason is kept.
    pub fn allow(&mut self, reason: impl Into<String>) {
        if self.allowed.is_none() {
            self.allowed = Some(reason.into());
        }
    }
    /// Why a hook allowed the call, when one did.
    pub fn allowed(&self) -> Option<&str> {
        self.allowed.as_deref()
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
    /// Answers the call with `content` (text, or parts); the tool does not run.
    pub fn mock(&mut self, content: impl Into<Content>) {
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
    fn closed(&self) -> bool {
        matches!(
            self.decision,
            Some(ToolDecision::Block(_) | ToolDecision::Mock(_))
        )
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A tool call returned (or was blocked, mocked or rejected). Hooks may rewrite what the model
/// sees (`content`, `is_error`); which call it answers (its id and tool name) cannot change.
#[derive(Clone, Debug, Serialize)]
pub struct AfterTool {
    #[serde(rename = "tool_use_id")]
    call_id: String,
    #[serde(rename = "tool_name")]
    name: String,
    #[serde(rename = "tool_input")]
    input: Value,
    /// The content the model will see: text, or parts (a hook may drop, replace or redact
    /// an image or a file).
    pub content: Content,
    /// True when the content reports a failure (the model is told it is an error).
    pub is_error: bool,
    mocked: bool,
    #[serde(skip)]
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
#[derive(Clone, Debug, Serialize)]
pub struct ToolFailed {
    #[serde(flatten, serialize_with = "form::call")]
    call: ToolCallRef,
    /// The input the tool received.
    #[serde(rename = "tool_input")]
    input: Value,
    /// What went wrong.
    error: String,
    #[serde(skip)]
    recovery: Option<String>,
    #[serde(skip)]
    rewritten: Option<String>,
    #[serde(skip)]
    marks: u32,
    #[serde(skip)]
    info: Option<Arc<ToolInfo>>,
}
impl ToolFailed {
    /// The input the tool received.
    pub fn input(&self) -> &Value {
        &self.input
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
}
impl ToolFailed {
    /// A new event for a call given by id and tool name.
    pub fn new(
        call_id: impl Into<Arc<str>>,
        name: impl Into<Arc<str>>,
        input: Value,
        error: String,
    ) -> Self {
        ToolFailed::for_call(ToolCallRef::named(call_id, name), input, error)
    }
    /// A new event for a call (runtimes use this: it copies nothing).
    pub fn for_call(call: ToolCallRef, input: Value, error: String) -> Self {
        ToolFailed {
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
impl Decides for ToolFailed {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
