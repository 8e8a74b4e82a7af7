//! Testing your agents: [`ScriptedModel`] plays back model turns written in advance, so an
//! agent's tools, hooks and outcome can be tested without a provider, deterministically and
//! offline.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use agentry_core::testing::ScriptedModel;
//! use agentry_core::{History, Model, ModelRequest};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! let model = ScriptedModel::new()
//!     .tool_call("get_weather", json!({"city": "Paris"}))
//!     .text("Sunny, go.");
//! let request = ModelRequest::new(History::default());
//! let first: Vec<_> = model.stream(&request).collect().await;
//! assert!(first.iter().all(|event| event.is_ok()));
//! assert_eq!(model.remaining(), 1);
//! # }
//! ```

mod scripted;

pub use scripted::{ScriptedModel, ScriptedTurn};
