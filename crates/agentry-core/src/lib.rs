//! # agentry-core
//!
//! The core of agentry, a runtime for LLM agents built around lifecycle hooks: messages and the
//! shared [`History`], the [`Model`] and [`Tool`] traits, typed tools (from closures with
//! [`tool()`], from types with [`StructTool`]), agent definitions, the hook engine ([`hooks`]) and
//! the step machine ([`machine`]). Runtimes (the in-process one in the `agentry` crate,
//! durable ones elsewhere) drive the machine and execute its effects.
//!
//! Most users depend on the `agentry` facade instead, which re-exports this crate.
//!
//! ```
//! use agentry_core::hooks::{on, Hooks, Events};
//! let mut hooks = Hooks::new();
//! assert!(!hooks.wants(Events::BEFORE_TOOL));            // no hook: the event costs one branch
//! hooks.add(on::before_tool(|ev, _ctx| async move { Ok(ev) }));
//! assert!(hooks.wants(Events::BEFORE_TOOL));
//! ```
#![warn(missing_docs, unreachable_pub)]

pub mod agent;
pub mod awake;
mod compaction;
pub mod content;
pub mod deadline;
mod describe;
pub mod env_template;
mod error;
pub mod fork;
mod history;
pub mod hooks;
pub mod machine;
mod message;
mod model;
mod price;
pub mod redact;
pub mod run;
mod state;
pub mod store;
pub mod testing;
mod tokens;
pub mod tool;
mod usage;

pub use agent::RunOptions;
pub use agent::{Agent, AgentBuilder, AgentDef, AgentTool, OutputSpec};
pub use content::{Content, Part};
pub use describe::{error_with_causes, panic_message, schema_violations};
pub use error::Error;
pub use fork::{Fork, ForkError};
pub use history::History;
pub use machine::{RunMachine, RunSnapshot, SNAPSHOT_VERSION};
pub use message::{Message, Role, ThinkingBlock, ToolCall, ToolCallRef, ToolResult};
pub use model::{
    Model, ModelError, ModelErrorKind, ModelEvent, ModelParams, ModelRequest, ModelResponse,
    ModelStream, TurnProgress,
};
pub use price::Price;
pub use redact::Redact;
pub use run::approval::{Decision, DecisionError, PendingApproval, match_decisions};
pub use run::context::{
    DEFAULT_HOOK_TIMEOUT, HookCtx, Notice, OpenHook, RunContext, RunContextSpec, RunEngine,
    RunInfo, ToolCtx,
};
pub use run::events::{EVENT_FORMAT_VERSION, RunEvent};
pub use run::output::RunOutput;
pub use run::recorded::RecordedHistory;
pub use run::stop::{Limit, StopReason};
pub use state::{AgentState, ErasedState, StateError, StateSource};
pub use store::{
    Checkpoint, DEFAULT_EVENTS_PAGE, LogLayout, LogSpan, MemoryStore, MessageLog, QueuedSave,
    RecordedEvent, Renewal, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent,
    StoredRun,
};
pub use tokens::{
    EstimateCounter, IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter, content_tokens, message_tokens,
    prompt_tokens,
};
pub use tool::{
    IntoToolOutput, Json, StoredToolSource, StructTool, TOOL_SOURCE_WARNING, Tool, ToolAnnotations,
    ToolFailure, ToolInfo, ToolOutput, ToolSet, ToolSource, ToolSpec, TypedTool, tool,
};
pub use usage::{FinishReason, Usage};
