//! Everything an agent author usually needs: `use agentry::prelude::*;`.

pub use crate::agent::{CompactStrategy, Compaction, OnCompactError};
pub use crate::hooks::{
    AfterCompact, AfterModel, AfterStep, AfterSubAgent, AfterTool, BeforeCompact, BeforeModel,
    BeforeStep, BeforeSubAgent, BeforeTool, CompactError, Custom, EventKind, Events, Hook, HookExt,
    HookFailed, HookFinished, HookName, HookResult, HookStarted, MessageAdded, Next, RunEnd,
    RunError, RunStart, StateChange, Stop, SubAgentError, TextDelta, Thinking, ToolCallRequest,
    ToolError, on, on_sync,
};
pub use crate::{
    Agent, Anthropic, Error, History, HookCtx, Json, MemoryStore, Message, Model, ModelErrorKind,
    ModelParams, ModelRequest, ModelResponse, OpenAi, OpenAiResponses, RunEvent, RunHandle,
    RunOptions, RunOutput, RunSnapshot, RunStore, Runtime, ScriptedModel, ScriptedTurn,
    StateSource, StopReason, Tool, ToolCtx, ToolFailure, ToolOutput, ToolResult, Usage, tool,
};
pub use futures::StreamExt;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{Value, json};
