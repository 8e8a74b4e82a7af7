//! # agentry-models
//!
//! Model clients for agentry, behind the core [`Model`](agentry_core::Model) trait:
//!
//! - [`OpenAi`]: the Chat Completions API of OpenAI and of every server that speaks it (Azure
//!   OpenAI, vLLM, llama.cpp's `llama-server`, Ollama, LM Studio, OpenRouter, ...);
//! - [`OpenAiResponses`]: OpenAI's Responses API;
//! - [`Anthropic`]: the Anthropic Messages API, extended thinking and prompt caching included;
//!
//! Each family is a cargo feature, both on by default: `openai` (the two OpenAI clients, and
//! `tiktoken` for sizing their prompts) and `anthropic`. The scripted model for testing agents
//! is `agentry_core::testing::ScriptedModel`.
//!
//! The HTTP clients stream every turn over server-sent events, assemble tool calls from their
//! argument pieces, report usage, retry rate limits and server errors with exponential backoff
//! and jitter honouring `Retry-After` ([`RetryPolicy`]), and fail with errors that name the
//! provider and say what to do. API keys never appear in Debug output, logs, events or errors.
//! Dropping a turn's stream (a cancelled run) aborts its HTTP request.
//!
//! Hosted providers are configured from the environment or in code:
//!
//! ```no_run
//! # #[cfg(all(feature = "openai", feature = "anthropic"))]
//! # fn main() -> Result<(), agentry_models::Error> {
//! use agentry_models::{Anthropic, OpenAi, RetryPolicy, from_spec};
//! let openai = OpenAi::from_env("gpt-4.1")?; // OPENAI_API_KEY, OPENAI_BASE_URL, ...
//! let claude = Anthropic::builder("claude-sonnet-4-5")
//!     .api_key("sk-ant-...")
//!     .thinking(2048)
//!     .retry(RetryPolicy::default().max_retries(6))
//!     .build()?;
//! let any = from_spec("openai-responses:o4-mini")?; // provider:model, from the environment
//! # Ok(()) }
//! ```
#![warn(missing_docs, unreachable_pub)]
// With one provider family left out, parts of the shared HTTP layer go unused.

#[cfg(feature = "anthropic")]
mod anthropic;
mod assemble;
mod error;
mod http;
#[cfg(feature = "openai")]
mod openai;
mod params;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod parts;
mod spec;
#[cfg(test)]
mod test_request;
#[cfg(feature = "openai")]
mod tiktoken;

#[cfg(feature = "anthropic")]
pub use anthropic::{Anthropic, AnthropicBuilder};
pub use error::Error;
pub use http::{DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES, RetryPolicy};
#[cfg(feature = "openai")]
pub use openai::{OpenAi, OpenAiBuilder, OpenAiResponses, OpenAiResponsesBuilder};
pub use spec::from_spec;
#[cfg(feature = "openai")]
pub use tiktoken::Tiktoken;
