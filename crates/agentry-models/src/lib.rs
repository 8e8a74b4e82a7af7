//! # agentry-models
//!
//! Models for agentry. For now: [`ScriptedModel`], a model that plays back scripted turns, for
//! testing your own agents (and for benchmarks). It streams text, reasoning, tool calls, usage and
//! errors exactly as a real provider would, and records the requests it received.
//!
//! ```
//! use agentry_models::ScriptedModel;
//! use serde_json::json;
//! let model = ScriptedModel::new()
//!     .tool_call("get_weather", json!({"city": "Paris"}))
//!     .text("Sunny, go.");
//! assert_eq!(model.remaining(), 2);
//! ```
#![warn(missing_docs)]

mod scripted;

pub use scripted::{ScriptedModel, ScriptedTurn};
