//! Everything an agent author usually needs: `use agentry::prelude::*;`.

pub use crate::hooks::{
    AfterModel, AfterStep, AfterSubAgent, AfterTool, BeforeModel, BeforeStep, BeforeSubAgent,
    BeforeTool, Custom, EventKind, Events, Hook, HookExt, HookFailed, HookFinished, HookResult,
    HookStarted, MessageAdded, RunEnd, RunError, RunStart, StateChange, Stop, SubAgentError,
    TextDelta, Thinking, ToolError, on,
};
pub use crate::{
    Agent, Error, History, HookCtx, Message, Model, ModelRequest, ModelResponse, RunEvent,
    RunHandle, RunOptions, RunOutput, Runtime, ScriptedModel, ScriptedTurn, StateSource,
    StopReason, Tool, ToolCtx, ToolFailure, ToolOutput, ToolResult, Usage, tool,
};
pub use futures::StreamExt;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{Value, json};
