//! # agentry
//!
//! A Rust runtime for LLM agents built around lifecycle hooks. Every phase of a run — the run,
//! each step, each model call, each tool call, sub-agents, state changes, streamed text — can be
//! observed, rewritten, blocked or answered by hooks.
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
//! assert_eq!(model.requests()[1].messages.last().unwrap().tool_result_text(), Some("Sunny in Paris"));
//! # Ok(()) }
//! ```
//!
//! See the crate README for the hooks guide.
#![warn(missing_docs)]

pub mod builtins;
pub mod prelude;
mod runtime;

pub use agentry_core::*;
pub use agentry_models::{
    self as models, Anthropic, OpenAi, OpenAiResponses, RetryPolicy, ScriptedModel, ScriptedTurn,
};
pub use runtime::{RunHandle, Runtime};
