//! The HTTP clients against recorded server-sent-event transcripts played back chunk by chunk by
//! an in-process server: CRLF line endings, multi-line `data:` fields, chunk boundaries inside
//! UTF-8 characters, a missing `[DONE]`, streams cut before the turn ends, tool-call arguments
//! split across many deltas, retries of 503 and 429 (honouring `Retry-After`), requests that must
//! not be retried, cancellation by dropping the stream, and the Anthropic Messages and OpenAI
//! Responses event shapes.

use crate::transcript_server::{Reply, TranscriptServer};
use agentry::prelude::*;
use agentry::{Message, Model, ModelRequest, OpenAi};
use agentry::{ModelError, ModelEvent, ToolCall};
use agentry_models::RetryPolicy;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

type Outcome = Vec<Result<ModelEvent, ModelError>>;

fn request() -> ModelRequest {
    ModelRequest::new([Message::user("hi")].into_iter().collect())
}

/// Retries with waits short enough for tests.
fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(3)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(20))
}

fn chat(server: &TranscriptServer, retry: RetryPolicy) -> OpenAi {
    OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .retry(retry)
        .read_timeout(Duration::from_secs(10))
        .build()
        .expect("a chat client")
}

async fn run(model: &dyn Model) -> Outcome {
    let request = request();
    model.stream(&request).collect().await
}

/// The events of a turn that must have succeeded.
fn events(outcome: Outcome) -> Vec<ModelEvent> {
    outcome
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("the turn failed: {e}")))
        .collect()
}

/// The events before the error a turn must have ended with, and that error.
fn failure(mut outcome: Outcome) -> (Vec<ModelEvent>, ModelError) {
    let error = match outcome.pop() {
        Some(Err(error)) => error,
        other => panic!("the turn should end with an error, got {other:?} last"),
    };
    (events(outcome), error)
}

fn text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn text_delta(t: &str) -> ModelEvent {
    ModelEvent::TextDelta(t.to_owned())
}

fn tool_call(id: &str, name: &str, arguments: &str) -> ModelEvent {
    ModelEvent::ToolCall(ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    })
}

/// One `chat.completion.chunk` with a single choice.
fn chat_chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// An SSE event with a single `data:` line.
fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// A good chat turn that says `said` and stops, one event per chunk.
fn chat_turn(said: &str) -> Reply {
    Reply::sse([
        data(&chat_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )),
        data(&chat_chunk(json!({"content": said}), None)),
        data(&chat_chunk(json!({}), Some("stop"))),
        "data: [DONE]\n\n".to_owned(),
    ])
}

mod anthropic;
mod chat;
mod faults;
mod limits;
mod media;
mod responses;
mod server;
