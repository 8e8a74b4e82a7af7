//! Retries and cancellation, over recorded transcripts.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer};
use agentry::{FinishReason, ModelEvent};
use agentry::{Model, ModelErrorKind};
use agentry_models::RetryPolicy;
use std::time::{Duration, Instant};

/// A policy whose own backoff is far longer than any test waits, so a quick retry shows that the
/// server's `Retry-After` was honoured instead.
fn slow_backoff(retries: u32) -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(retries)
        .initial_backoff(Duration::from_secs(30))
        .max_backoff(Duration::from_secs(30))
        .max_wait(Duration::from_secs(120))
}

#[tokio::test]
async fn a_503_with_retry_after_zero_is_retried_at_once_and_the_second_attempt_streams() {
    let server = TranscriptServer::start(vec![
        Reply::status(
            503,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        )
        .header("retry-after", "0"),
        chat_turn("Back again."),
    ])
    .await;
    let started = Instant::now();

    let events = events(run(&chat(&server, slow_backoff(3))).await);

    assert_eq!(
        events,
        [
            text_delta("Back again."),
            ModelEvent::Finish(FinishReason::Stop)
        ]
    );
    assert_eq!(server.hits(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "Retry-After: 0 was not honoured: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retry_after_ms_sets_the_wait_before_the_next_attempt() {
    let server = TranscriptServer::start(vec![
        Reply::status(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
        )
        .header("retry-after-ms", "300"),
        chat_turn("ok"),
    ])
    .await;

    let events = events(run(&chat(&server, slow_backoff(3))).await);

    assert_eq!(text(&events), "ok");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_millis(300) && gap < Duration::from_secs(5),
        "waited {gap:?} between attempts"
    );
}

#[tokio::test]
async fn a_400_is_not_retried_and_carries_the_providers_message() {
    let server = TranscriptServer::one(Reply::status(
        400,
        r#"{"error":{"message":"bad param","type":"invalid_request_error"}}"#,
    ))
    .await;

    let (events, error) = failure(run(&chat(&server, quick_retries())).await);

    assert!(events.is_empty());
    assert_eq!(error.kind, ModelErrorKind::InvalidRequest, "{error}");
    assert_eq!(error.model, "openai:gpt-test");
    assert!(error.message.contains("HTTP 400"), "{error}");
    assert!(error.message.contains("bad param"), "{error}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_429_on_every_attempt_gives_up_after_the_policy_and_counts_the_attempts() {
    let server = TranscriptServer::one(
        Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "0"),
    )
    .await;

    let (events, error) = failure(run(&chat(&server, slow_backoff(2))).await);

    assert!(events.is_empty());
    assert_eq!(error.kind, ModelErrorKind::RateLimited, "{error}");
    assert!(error.message.contains("Rate limit reached"), "{error}");
    assert!(error.message.contains("3 attempts"), "{error}");
    assert_eq!(server.hits(), 3);
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn dropping_the_stream_after_the_first_delta_aborts_the_request() {
    let more = data(&chat_chunk(json!({"content": " more"}), None));
    let server = TranscriptServer::one(
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": "First"}),
            None,
        ))])
        .then_trickle(more, Duration::from_millis(200), Duration::from_secs(10)),
    )
    .await;
    let model = chat(&server, RetryPolicy::none());
    let request = request();

    let mut stream = model.stream(&request);
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the first event in time");
    assert_eq!(first.map(Result::unwrap), Some(text_delta("First")));
    drop(stream);

    assert!(
        server.body_cut_short_within(Duration::from_secs(2)).await,
        "the server kept streaming to a dropped request"
    );
    assert_eq!(server.hits(), 1);
}
