//! An OpenAI Chat Completions turn, read by [`agentry::OpenAi`] as it streams: the server-sent
//! `chat.completion.chunk` events, or the error body of a failure status.
//!
//! Input: a byte that picks the status (mostly `200` with an event stream), a byte that says
//! where the body is cut in two reads, then the body.

use crate::support::{CannedServer, http_client};
use agentry::{OpenAi, RetryPolicy};
use std::sync::OnceLock;

/// Streams one turn whose server answers as `data` says; panics if the turn does not end with
/// its finish or an error.
pub fn run(data: &[u8]) {
    static MODEL: OnceLock<OpenAi> = OnceLock::new();
    let model = MODEL.get_or_init(|| {
        OpenAi::builder("gpt-4.1-mini")
            .base_url(format!("{}/v1", CannedServer::get().url()))
            .api_key("sk-fuzz")
            .retry(RetryPolicy::none())
            .http_client(http_client())
            .build()
            .expect("an OpenAI client")
    });
    crate::model_turn::turn(model, data);
}
