//! What a provider sends is bounded before it is held: an event longer than the client's event
//! limit, or a response longer than its response limit, ends the turn with a stream error that
//! names the limit (not retried: the same request would bring the same); an error response is
//! read only as far as its message needs.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer};
use agentry::ModelErrorKind;
use agentry_models::OpenAi;

fn limited(server: &TranscriptServer, event: usize, response: usize) -> OpenAi {
    OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .retry(quick_retries())
        .max_event_bytes(event)
        .max_response_bytes(response)
        .build()
        .expect("a chat client")
}

#[tokio::test]
async fn an_event_over_the_limit_ends_the_turn_and_is_not_retried() {
    // One event, streamed in pieces, that never ends: 64 KiB of one data line.
    let line = format!("data: {}", "x".repeat(64 << 10));
    let chunks: Vec<String> = line
        .as_bytes()
        .chunks(4096)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let server = TranscriptServer::one(Reply::sse(chunks)).await;
    let (events, error) = failure(run(&limited(&server, 16 << 10, 1 << 20)).await);
    assert!(events.is_empty());
    assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
    for words in [
        "one server-sent event passed 16384 bytes",
        "max_event_bytes",
    ] {
        assert!(error.message.contains(words), "{words:?} in {error}");
    }
    assert_eq!(server.hits(), 1, "not retried");
}

#[tokio::test]
async fn many_small_events_are_bounded_by_the_response_limit() {
    let piece = data(&chat_chunk(json!({"content": "word "}), None));
    let server = TranscriptServer::one(Reply::sse(vec![piece; 400])).await;
    let (events, error) = failure(run(&limited(&server, 1 << 10, 32 << 10)).await);
    assert!(
        !events.is_empty(),
        "what came before the limit was streamed"
    );
    for words in ["passed 32768 bytes", "max_response_bytes"] {
        assert!(error.message.contains(words), "{words:?} in {error}");
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn events_under_the_limits_stream_as_before() {
    let server = TranscriptServer::one(chat_turn("hello there")).await;
    let out = events(run(&limited(&server, 1 << 10, 1 << 20)).await);
    assert_eq!(text(&out), "hello there");
}

#[tokio::test]
async fn a_huge_error_body_is_read_only_as_far_as_its_message_needs() {
    let message = "y".repeat(4 << 20);
    let body =
        format!(r#"{{"error":{{"message":"bad {message}","type":"invalid_request_error"}}}}"#);
    let server = TranscriptServer::one(Reply::status(400, &body)).await;
    let (_, error) = failure(run(&chat(&server, quick_retries())).await);
    assert_eq!(error.kind, ModelErrorKind::InvalidRequest, "{error}");
    assert!(
        error.message.len() < 100 << 10,
        "{} bytes",
        error.message.len()
    );
}
