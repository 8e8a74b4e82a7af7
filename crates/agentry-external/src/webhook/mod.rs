//! Webhooks: each matching event POSTed to a URL as the JSON a command gets on stdin, signed
//! with the Standard Webhooks scheme, the answer read as a command's stdout; retried with
//! backoff where the event decides nothing.

mod client;
mod deliver;
mod hook;
mod prepare;
mod signing;
mod spec;

pub use hook::Webhook;
pub use spec::{MAX_RETRIES, WebhookSpec};

pub(crate) use client::WebhookClient;
pub(crate) use deliver::deliver;
