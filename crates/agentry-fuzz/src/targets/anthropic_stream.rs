//! An Anthropic Messages turn, read by [`agentry::Anthropic`] as it streams: the server-sent
//! `message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping` and `error`
//! events, or the error body of a failure status.
//!
//! Input: a byte that picks the status (mostly `200` with an event stream), a byte that says
//! where the body is cut in two reads, then the body.

use crate::support::{CannedServer, http_client};
use agentry::{Anthropic, RetryPolicy};
use std::sync::OnceLock;

/// Streams one turn whose server answers as `data` says; panics if the turn does not end with
/// its finish or an error.
pub fn run(data: &[u8]) {
    static MODEL: OnceLock<Anthropic> = OnceLock::new();
    let model = MODEL.get_or_init(|| {
        Anthropic::builder("claude-sonnet-4-5")
            .base_url(CannedServer::get().url())
            .api_key("sk-ant-fuzz")
            .thinking(2048)
            .retry(RetryPolicy::none())
            .http_client(http_client())
            .build()
            .expect("an Anthropic client")
    });
    crate::model_turn::turn(model, data);
}
