//! Everything an agent author usually needs: `use agentry::prelude::*;`.

pub use crate::agent::{CompactStrategy, Compaction, OnCompactError};
pub use crate::hooks::{
    AfterCompact, AfterModel, AfterStep, AfterSubAgent, AfterTool, ApprovalRequested,
    ApprovalResolved, BeforeCompact, BeforeModel, BeforeStep, BeforeSubAgent, BeforeTool, BoxError,
    CompactFailed, Custom, EventKind, Events, Hook, HookError, HookExt, HookFailed, HookFailure,
    HookFinished, HookName, HookRegistration, HookResult, HookStarted, IntoHook, MessageAdded,
    Next, Resolver, RunEnd, RunFailed, RunStart, StateChange, StepDecision, Stop, StoppedByHuman,
    SubAgentFailed, TextDelta, Thinking, ToolCallRequest, ToolDecision, ToolFailed, on, on_mut,
    on_sync,
};
pub use crate::{
    Agent, AgentBuilder, Anthropic, Decision, Error, FinishReason, History, HookCtx, Json, Limit,
    MemoryStore, Message, Model, ModelErrorKind, ModelParams, ModelRequest, ModelResponse, OpenAi,
    OpenAiResponses, PendingApproval, RunContext, RunEvent, RunHandle, RunOptions, RunOutput,
    RunSnapshot, RunStatus, RunStore, Runtime, ScriptedModel, ScriptedTurn, StateSource,
    StopReason, Tool, ToolCtx, ToolFailure, ToolOutput, ToolResult, ToolSpec, TypedTool, Usage,
    tool,
};
pub use futures::StreamExt;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{Value, json};
