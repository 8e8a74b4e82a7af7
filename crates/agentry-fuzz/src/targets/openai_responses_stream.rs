//! An OpenAI Responses turn, read by [`agentry::OpenAiResponses`] as it streams: the
//! server-sent `response.*` events, or the error body of a failure status.
//!
//! Input: a byte that picks the status (mostly `200` with an event stream), a byte that says
//! where the body is cut in two reads, then the body.

use crate::support::{CannedServer, http_client};
use agentry::{OpenAiResponses, RetryPolicy};
use std::sync::OnceLock;

/// Streams one turn whose server answers as `data` says; panics if the turn does not end with
/// its finish or an error.
pub fn run(data: &[u8]) {
    static MODEL: OnceLock<OpenAiResponses> = OnceLock::new();
    let model = MODEL.get_or_init(|| {
        OpenAiResponses::builder("o4-mini")
            .base_url(format!("{}/v1", CannedServer::get().url()))
            .api_key("sk-fuzz")
            .retry(RetryPolicy::none())
            .http_client(http_client())
            .build()
            .expect("an OpenAI Responses client")
    });
    crate::model_turn::turn(model, data);
}
