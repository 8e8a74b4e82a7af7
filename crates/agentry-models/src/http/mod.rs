//! The HTTP plumbing the provider clients share: configuration, retries, failure messages and
//! the streamed turn.

mod config;
mod endpoint;
mod failure;
mod retry;
mod stream;

pub(crate) use config::{HttpConfig, KeyHeader, http_builder_methods};
pub(crate) use endpoint::{Endpoint, EnvNames};
pub(crate) use failure::ProviderMessage;
pub use retry::RetryPolicy;
pub(crate) use stream::{DecodeError, Decoder, Flow, turn_stream};
