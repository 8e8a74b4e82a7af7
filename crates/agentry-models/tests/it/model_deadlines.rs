//! The runtime's model deadlines over real HTTP: a server that keeps a stream open with keep-alive
//! comments (OpenAI) or pings (Anthropic) and sends nothing else cannot hold a run past the idle
//! timeout, which those bytes do not reset; a server that streams text without end cannot hold it
//! past the whole-turn timeout. Each fails the run with an error naming its timeout. The clients'
//! own read timeouts are left at their defaults (minutes), which the keep-alives would reset.

use crate::transcript_server::{Reply, TranscriptServer};
use agentry::prelude::*;
use agentry::{Anthropic, Model, OpenAi};
use agentry::{ModelError, ModelErrorKind};
use serde_json::Value;
use std::time::{Duration, Instant};

const IDLE: Duration = Duration::from_millis(300);

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn chat_chunk(delta: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    })
}

fn openai(server: &TranscriptServer) -> OpenAi {
    OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .build()
        .expect("a chat client")
}

/// Runs a one-turn agent on `model` and returns its model error and how long the run took.
async fn fails(model: impl Model, runtime: Runtime) -> (ModelError, Duration) {
    let agent = Agent::builder("talker").model(model).build().unwrap();
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(30), runtime.run(&agent, "Hi"))
        .await
        .expect("the run hung: no deadline fired");
    match outcome {
        Err(Error::Model(e)) => (e, started.elapsed()),
        other => panic!("a model error, not {other:?}"),
    }
}

#[tokio::test]
async fn keep_alive_comments_do_not_hold_a_run_past_the_idle_timeout() {
    let server = TranscriptServer::one(
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": "Hel"}),
        ))])
        .then_trickle(
            ": keep-alive\n\n",
            Duration::from_millis(50),
            Duration::from_secs(20),
        ),
    )
    .await;
    let runtime = Runtime::new().model_idle_timeout(IDLE);

    let (error, took) = fails(openai(&server), runtime).await;

    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert!(error.message.contains("no event for 300ms"), "{error}");
    assert!(
        error.message.contains("Runtime::model_idle_timeout"),
        "{error}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        server.body_cut_short_within(Duration::from_secs(5)).await,
        "the request was not dropped"
    );
}

#[tokio::test]
async fn anthropic_pings_do_not_hold_a_run_past_the_idle_timeout() {
    let start = json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": 1}}});
    let block = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}});
    let delta = json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "Hel"}});
    let event = |name: &str, value: &Value| format!("event: {name}\ndata: {value}\n\n");
    let server = TranscriptServer::one(
        Reply::sse([
            event("message_start", &start),
            event("content_block_start", &block),
            event("content_block_delta", &delta),
        ])
        .then_trickle(
            event("ping", &json!({"type": "ping"})),
            Duration::from_millis(50),
            Duration::from_secs(20),
        ),
    )
    .await;
    let model = Anthropic::builder("claude-test")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .expect("an Anthropic client");
    let runtime = Runtime::new().model_idle_timeout(IDLE);

    let (error, took) = fails(model, runtime).await;

    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert!(
        error.message.contains("Runtime::model_idle_timeout"),
        "{error}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn text_without_end_does_not_hold_a_run_past_the_turn_timeout() {
    let server = TranscriptServer::one(
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": "la"}),
        ))])
        .then_trickle(
            data(&chat_chunk(json!({"content": " la"}))),
            Duration::from_millis(50),
            Duration::from_secs(20),
        ),
    )
    .await;
    let runtime = Runtime::new()
        .model_idle_timeout(IDLE)
        .model_turn_timeout(Duration::from_millis(800));

    let (error, took) = fails(openai(&server), runtime).await;

    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert!(error.message.contains("within 800ms"), "{error}");
    assert!(
        error.message.contains("Runtime::model_turn_timeout"),
        "{error}"
    );
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}
