//! What almost every agent needs, in one import: `use agentry::prelude::*;`.
//!
//! Twenty names: the agent and its runtime, typed tools, the contexts hooks and tools receive,
//! the hook constructors ([`on`]) and their tuning ([`HookExt`]: name, priority, policy), a run's output, events and stop reason, approval decisions,
//! the in-memory store and the scripted model for tests, and the serde, schemars and futures
//! names that agents' code uses with them. Everything else is one path away: hook events and
//! hook traits in [`agentry::hooks`](crate::hooks), messages, models and stores at the crate
//! root, compaction in [`agentry::agent`](crate::agent).

pub use crate::hooks::{HookExt, on};
pub use crate::{
    Agent, Decision, Error, HookCtx, MemoryStore, RunEvent, RunOutput, Runtime, ScriptedModel,
    StopReason, ToolCtx, tool,
};
pub use futures::StreamExt;
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{Value, json};
