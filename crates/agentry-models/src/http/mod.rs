//! The HTTP plumbing the provider clients share: configuration, retries, failure messages and
//! the streamed turn.

mod bounded;
mod config;
mod endpoint;
mod failure;
mod retry;
mod stream;

pub(crate) use bounded::BodyLimits;
pub use bounded::{DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RESPONSE_BYTES};
#[cfg(feature = "openai")]
pub(crate) use config::env_var;
pub(crate) use config::{HttpConfig, KeyHeader, shared_builder_methods};
pub(crate) use endpoint::{Endpoint, EnvNames};
pub use retry::RetryPolicy;
pub(crate) use stream::{DecodeError, Decoder, Flow, TurnEnd, turn_stream};
