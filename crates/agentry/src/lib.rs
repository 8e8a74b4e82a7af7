//! # agentry
//!
//! A Rust runtime for LLM agents built around lifecycle hooks. Every phase of a run — the run,
//! each step, each model call, each tool call, sub-agents, human approval, context compaction,
//! state changes, streamed text — can be observed, rewritten, blocked or answered by hooks.
//!
//! - [`Runtime`] runs agents in-process on tokio; with a store (`MemoryStore`, or `SqliteStore`
//!   / `PostgresStore` from `agentry-store`) it checkpoints every run, pauses runs for a person's
//!   approval ([`Runtime::decide`]), resumes them after a crash ([`Runtime::resume`]) and
//!   continues sessions.
//! - [`builtins`] holds the hooks agents usually need: guards, a tool policy, tool mocks and a
//!   recorder, a finish gate, telemetry, redaction.
//! - [`agent::Compaction`] keeps a long run's prompt within the model's context.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), agentry::Error> {
//! use agentry::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct City { city: String }
//!
//! #[derive(Default, Clone, Serialize, Deserialize)]
//! struct Trip { visited: Vec<String> }
//!
//! let weather = tool("get_weather", "Current weather for a city", |a: City, ctx: ToolCtx| async move {
//!     ctx.update_state(|s: &mut Trip| s.visited.push(a.city.clone()))?;
//!     Ok(format!("Sunny in {}", a.city))
//! });
//!
//! let model = ScriptedModel::new()
//!     .tool_call("get_weather", json!({"city": "Paris"}))
//!     .text("Sunny, go.");
//!
//! let agent = Agent::builder("planner")
//!     .instructions("Plan short trips. Check the weather first.")
//!     .model(model.clone())
//!     .tool(weather)
//!     .state(Trip::default())
//!     .before_tool(|mut ev, _ctx| async move {
//!         if ev.input["city"] == "Atlantis" { ev.block("Atlantis is not on any map"); }
//!         Ok(ev)
//!     })
//!     .build()?;
//!
//! let out = Runtime::new().run(&agent, "A weekend in Paris?").await?;
//! assert_eq!(out.output.as_deref(), Some("Sunny, go."));
//! assert_eq!(out.state.visited, ["Paris"]);
//! assert_eq!(model.requests()[1].messages.last().unwrap().tool_result_text().as_deref(), Some("Sunny in Paris"));
//! # Ok(()) }
//! ```
//!
//! Pausing for approval, and deciding later (in any process that opens the same store):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), agentry::Error> {
//! use agentry::prelude::*;
//! use agentry::Decision;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Path { path: String }
//!
//! let delete = tool("delete", "Deletes a file", |a: Path, _ctx: ToolCtx| async move {
//!     Ok(format!("deleted {}", a.path))
//! })
//! .needs_approval();
//! let model = ScriptedModel::new().tool_call("delete", json!({"path": "/var/log/old.log"})).text("Done.");
//! let agent = Agent::builder("janitor").model(model).tool(delete).build()?;
//! let runtime = Runtime::new().store(MemoryStore::new());
//!
//! let out = runtime.run(&agent, "Delete the old log").await?;
//! let StopReason::AwaitingApproval { pending } = &out.stop else { unreachable!() };
//! assert_eq!(pending[0].tool, "delete");
//!
//! let out = runtime.decide(&agent, &out.run_id, [Decision::approve(&pending[0].call_id)]).await?;
//! assert_eq!(out.output.as_deref(), Some("Done."));
//! # Ok(()) }
//! ```
//!
//! See the crate README for the hooks guide.
#![warn(missing_docs, unreachable_pub)]

pub mod builtins;
pub mod prelude;
pub mod replay;

pub use agentry_core::testing::{ScriptedModel, ScriptedTurn};
pub use agentry_core::*;
#[cfg(feature = "anthropic")]
pub use agentry_models::Anthropic;
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub use agentry_models::{self as models, RetryPolicy};
#[cfg(feature = "openai")]
pub use agentry_models::{OpenAi, OpenAiResponses};
pub use agentry_runtime::{
    DEFAULT_MAX_TOOL_CALLS_PER_TURN, DEFAULT_MAX_TOOL_INPUT_BYTES, DEFAULT_MAX_TOOL_RESULT_BYTES,
    ResumeFrom, ResumeRequest, RunEvents, RunHandle, RunRequest, Runtime,
};

// The README and the book's chapters whose samples need only this crate (and its
// dev-dependencies), compiled and run as doc tests by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/introduction.md")]
mod book_introduction {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/getting-started.md")]
mod book_getting_started {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/agents.md")]
mod book_agents {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/hooks.md")]
mod book_hooks {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/media.md")]
mod book_media {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/builtin-hooks.md")]
mod book_builtin_hooks {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/providers.md")]
mod book_providers {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/faults.md")]
mod book_faults {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/performance.md")]
mod book_performance {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/contributing.md")]
mod book_contributing {}
