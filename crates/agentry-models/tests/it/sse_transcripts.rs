//! The HTTP clients against recorded server-sent-event transcripts played back chunk by chunk by
//! an in-process server: CRLF line endings, multi-line `data:` fields, chunk boundaries inside
//! UTF-8 characters, a missing `[DONE]`, streams cut before the turn ends, tool-call arguments
//! split across many deltas, retries of 503 and 429 (honouring `Retry-After`), requests that must
//! not be retried, cancellation by dropping the stream, and the Anthropic Messages and OpenAI
//! Responses event shapes.

use crate::transcript_server::{Reply, TranscriptServer, split_after, split_at_bytes};
use agentry::prelude::*;
use agentry::{
    Anthropic, Message, Model, ModelErrorKind, ModelRequest, OpenAi, OpenAiResponses, Usage,
};
use agentry::{FinishReason, ModelError, ModelEvent, ToolCall};
use agentry_models::RetryPolicy;
use std::time::{Duration, Instant};

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

// ---------------------------------------------------------------------------------------------
// The server itself
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_server_delivers_every_chunk_boundary_to_the_client() {
    let chunks = ["data: a", "bc\n", "\n", "data: \u{e9}"];
    let body: Vec<u8> = chunks.concat().into_bytes();
    // A boundary inside `é` too.
    let last = body.len() - 1;
    let server = TranscriptServer::one(Reply::sse(split_at_bytes(&body, &[7, 10, 11, last]))).await;

    let response = reqwest::get(&server.url).await.expect("a response");
    let mut frames = response.bytes_stream();
    let mut got = Vec::new();
    let mut ends = Vec::new();
    while let Some(frame) = frames.next().await {
        got.extend_from_slice(&frame.expect("a frame"));
        ends.push(got.len());
    }
    assert_eq!(got, body);
    for boundary in [7, 10, 11, last] {
        assert!(
            ends.contains(&boundary),
            "no read ended at byte {boundary}: {ends:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Chat Completions: framing
// ---------------------------------------------------------------------------------------------

/// A recorded Chat Completions turn, with a keep-alive comment line.
const CHAT_TRANSCRIPT: &str = r#": keep-alive

data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}

data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":{"content":", world"},"finish_reason":null}]}

data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

"#;

#[tokio::test]
async fn crlf_line_endings_split_between_cr_and_lf_decode_the_whole_turn() {
    let crlf = CHAT_TRANSCRIPT.replace('\n', "\r\n");
    // Every chunk ends in `\r` and the next starts with `\n`.
    let chunks = split_after(&crlf, "\r");
    assert!(chunks.len() > 10);
    let server = TranscriptServer::one(Reply::sse(chunks)).await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            text_delta("Hello"),
            text_delta(", world"),
            ModelEvent::Finish(FinishReason::Stop),
        ]
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(seen[0].body["model"], "gpt-test");
}

#[tokio::test]
async fn a_data_field_split_over_two_lines_is_joined_into_one_json_object() {
    let transcript = concat!(
        "data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\n",
        "data: \"delta\":{\"content\":\"two lines\"},\"finish_reason\":null}]}\n",
        "\n",
        "data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\n",
        "data: \"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n",
        "\n",
        "data: [DONE]\n",
        "\n",
    );
    let server = TranscriptServer::one(Reply::sse(split_after(transcript, "\n"))).await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            text_delta("two lines"),
            ModelEvent::Finish(FinishReason::Stop)
        ]
    );
}

#[tokio::test]
async fn a_data_field_without_a_space_after_the_colon_is_read() {
    let transcript = concat!(
        "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tight\"}}]}\n\n",
        "data:{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data:[DONE]\n\n",
    );
    let server = TranscriptServer::one(Reply::sse([transcript])).await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [text_delta("tight"), ModelEvent::Finish(FinishReason::Stop)]
    );
}

#[tokio::test]
async fn a_chunk_boundary_inside_a_utf8_character_keeps_the_text_intact() {
    let transcript = [
        data(&chat_chunk(json!({"content": "Café"}), None)),
        data(&chat_chunk(json!({"content": " 🌍!"}), None)),
        data(&chat_chunk(json!({}), Some("stop"))),
    ]
    .concat();
    let bytes = transcript.as_bytes();
    let e_acute = transcript.find('é').expect("é");
    let globe = transcript.find('🌍').expect("🌍");
    // One cut inside the two bytes of `é`, three inside the four bytes of `🌍`.
    let cuts = [e_acute + 1, globe + 1, globe + 2, globe + 3];
    for cut in cuts {
        assert!(!transcript.is_char_boundary(cut));
    }
    let server = TranscriptServer::one(Reply::sse(split_at_bytes(bytes, &cuts))).await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            text_delta("Café"),
            text_delta(" 🌍!"),
            ModelEvent::Finish(FinishReason::Stop),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Chat Completions: how a turn ends
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_missing_done_after_the_finish_reason_and_usage_is_a_complete_turn() {
    let server = TranscriptServer::one(Reply::sse([
        data(&chat_chunk(
            json!({"role": "assistant", "content": "Hi"}),
            None,
        )),
        data(&chat_chunk(json!({}), Some("length"))),
        data(&json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {
                "prompt_tokens": 12,
                "completion_tokens": 3,
                "total_tokens": 15,
                "prompt_tokens_details": {"cached_tokens": 4},
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        })),
        // The server closes here, without `data: [DONE]`.
    ]))
    .await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            text_delta("Hi"),
            ModelEvent::Usage(Usage {
                input_tokens: 12,
                output_tokens: 3,
                cached_input_tokens: 4,
                reasoning_tokens: 1,
                ..Usage::default()
            }),
            ModelEvent::Finish(FinishReason::Length),
        ]
    );
}

/// What every error of a chat turn cut after "Hello there" must say.
fn assert_cut_after_text(error: &ModelError) {
    assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
    assert_eq!(error.model, "openai:gpt-test");
    assert!(
        error
            .message
            .contains("ended the turn early after 11 characters of text"),
        "{error}"
    );
    assert!(error.message.contains("not retried"), "{error}");
}

#[tokio::test]
async fn a_stream_closed_before_the_finish_reason_fails_and_says_what_had_arrived() {
    let server = TranscriptServer::one(Reply::sse([
        data(&chat_chunk(
            json!({"role": "assistant", "content": "Hello"}),
            None,
        )),
        data(&chat_chunk(json!({"content": " there"}), None)),
        // The body ends cleanly here: no finish_reason, no [DONE].
    ]))
    .await;

    let (events, error) = failure(run(&chat(&server, quick_retries())).await);

    assert_eq!(events, [text_delta("Hello"), text_delta(" there")]);
    assert_cut_after_text(&error);
    assert!(error.message.contains("finish_reason"), "{error}");
    assert_eq!(server.hits(), 1, "output had been streamed: no retry");
}

#[tokio::test]
async fn a_connection_cut_after_text_is_not_retried() {
    let server = TranscriptServer::one(
        Reply::sse([
            data(&chat_chunk(
                json!({"role": "assistant", "content": "Hello"}),
                None,
            )),
            data(&chat_chunk(json!({"content": " there"}), None)),
        ])
        .then_abort(),
    )
    .await;

    let (events, error) = failure(run(&chat(&server, quick_retries())).await);

    assert_eq!(events, [text_delta("Hello"), text_delta(" there")]);
    assert_cut_after_text(&error);
    assert_eq!(server.hits(), 1, "output had been streamed: no retry");
}

#[tokio::test]
async fn a_stall_after_text_longer_than_the_read_timeout_fails_as_a_timeout_without_retry() {
    let server = TranscriptServer::one(
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": "Hello there"}),
            None,
        ))])
        .then_trickle(
            ": still here\n\n",
            Duration::from_secs(5),
            Duration::from_secs(10),
        ),
    )
    .await;
    let model = OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .retry(quick_retries())
        .read_timeout(Duration::from_millis(300))
        .build()
        .expect("a chat client");
    let started = Instant::now();

    let (events, error) = failure(run(&model).await);

    assert_eq!(events, [text_delta("Hello there")]);
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert!(error.message.contains("read timeout"), "{error}");
    assert!(
        error
            .message
            .contains("ended the turn early after 11 characters of text"),
        "{error}"
    );
    assert!(error.message.contains("not retried"), "{error}");
    assert_eq!(server.hits(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_connection_cut_before_any_output_is_retried() {
    let server = TranscriptServer::start(vec![
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        ))])
        .then_abort(),
        chat_turn("Second try."),
    ])
    .await;

    let events = events(run(&chat(&server, quick_retries())).await);

    assert_eq!(
        events,
        [
            text_delta("Second try."),
            ModelEvent::Finish(FinishReason::Stop)
        ]
    );
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn a_stream_closed_cleanly_before_any_output_is_retried() {
    let server = TranscriptServer::start(vec![
        Reply::sse([data(&chat_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        ))]),
        chat_turn("Second try."),
    ])
    .await;

    let events = events(run(&chat(&server, quick_retries())).await);

    assert_eq!(text(&events), "Second try.");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn a_connection_cut_after_the_finish_reason_keeps_the_complete_turn() {
    let server = TranscriptServer::one(
        Reply::sse([
            data(&chat_chunk(
                json!({"role": "assistant", "content": "Hi"}),
                None,
            )),
            data(&chat_chunk(json!({}), Some("stop"))),
            data(&json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})),
        ])
        .then_abort(),
    )
    .await;

    let events = events(run(&chat(&server, quick_retries())).await);

    assert_eq!(text(&events), "Hi");
    assert_eq!(events.last(), Some(&ModelEvent::Finish(FinishReason::Stop)));
    assert_eq!(server.hits(), 1, "a complete turn is not sent again");
}

// ---------------------------------------------------------------------------------------------
// Chat Completions: tool calls
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_call_arguments_split_across_many_interleaved_deltas_come_out_whole_in_index_order() {
    let weather_args = r#"{"city":"Paris","units":"metric"}"#;
    let time_args = r#"{"tz":"Europe/Paris"}"#;
    /// Pieces of one or two characters, alternately.
    fn pieces(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        let mut at = 0;
        let mut size = 1;
        while at < chars.len() {
            let end = (at + size).min(chars.len());
            out.push(chars[at..end].iter().collect());
            at = end;
            size = 3 - size;
        }
        out
    }
    /// One piece of the arguments of the call at `index`.
    fn call_delta(index: usize, arguments: &str) -> Value {
        let call = json!({"index": index, "function": {"arguments": arguments}});
        json!({ "tool_calls": [call] })
    }

    // The call at index 1 starts first; then the pieces of both interleave.
    let mut transcript = vec![
        data(&chat_chunk(
            json!({"role": "assistant", "content": null}),
            None,
        )),
        data(&chat_chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_time", "type": "function",
                "function": {"name": "get_time", "arguments": ""}}]}),
            None,
        )),
        data(&chat_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_weather", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        )),
    ];
    let (weather, time) = (pieces(weather_args), pieces(time_args));
    assert!(weather.len() > 20 && time.len() > 10);
    for i in 0..weather.len().max(time.len()) {
        if let Some(piece) = time.get(i) {
            transcript.push(data(&chat_chunk(call_delta(1, piece), None)));
        }
        if let Some(piece) = weather.get(i) {
            transcript.push(data(&chat_chunk(call_delta(0, piece), None)));
        }
    }
    transcript.push(data(&chat_chunk(json!({}), Some("tool_calls"))));
    transcript.push("data: [DONE]\n\n".to_owned());
    let server = TranscriptServer::one(Reply::sse(transcript)).await;

    let events = events(run(&chat(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            tool_call("call_weather", "get_weather", weather_args),
            tool_call("call_time", "get_time", time_args),
            ModelEvent::Finish(FinishReason::ToolCalls),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

fn anthropic(server: &TranscriptServer, retry: RetryPolicy) -> Anthropic {
    Anthropic::builder("claude-test")
        .api_key("k")
        .base_url(&server.url)
        .retry(retry)
        .read_timeout(Duration::from_secs(10))
        .build()
        .expect("an Anthropic client")
}

/// A recorded Messages turn: text, then a tool call whose input arrives in pieces.
const ANTHROPIC_TRANSCRIPT: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ty\": \"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[tokio::test]
async fn an_anthropic_crlf_transcript_with_pings_assembles_the_split_tool_input() {
    let crlf = ANTHROPIC_TRANSCRIPT.replace('\n', "\r\n");
    let server = TranscriptServer::one(Reply::sse(split_after(&crlf, "\r"))).await;

    let events = events(run(&anthropic(&server, RetryPolicy::none())).await);

    assert_eq!(
        events,
        [
            text_delta("Checking."),
            tool_call("toolu_01", "get_weather", r#"{"city": "Paris"}"#),
            ModelEvent::Usage(Usage {
                input_tokens: 25,
                output_tokens: 42,
                ..Usage::default()
            }),
            ModelEvent::Finish(FinishReason::ToolCalls),
        ]
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].body["stream"], true);
}

#[tokio::test]
async fn an_anthropic_stream_cut_after_text_before_message_stop_fails() {
    let cut = ANTHROPIC_TRANSCRIPT
        .split("event: content_block_stop")
        .next()
        .expect("the start of the transcript");
    let server = TranscriptServer::one(Reply::sse(split_after(cut, "\n\n"))).await;

    let (events, error) = failure(run(&anthropic(&server, quick_retries())).await);

    assert_eq!(events, [text_delta("Checking.")]);
    assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
    assert_eq!(error.model, "anthropic:claude-test");
    assert!(
        error
            .message
            .contains("ended the turn early after 9 characters of text"),
        "{error}"
    );
    assert!(error.message.contains("message_stop"), "{error}");
    assert!(error.message.contains("not retried"), "{error}");
    assert_eq!(server.hits(), 1);
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------------------------

/// A recorded Responses turn of three text pieces.
const RESPONSES_TRANSCRIPT: &str = r#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Sun"}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"ny in "}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Paris."}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Sunny in Paris."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny in Paris.","annotations":[]}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny in Paris.","annotations":[]}]}],"usage":{"input_tokens":31,"input_tokens_details":{"cached_tokens":0},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":38}}}

"#;

#[tokio::test]
async fn a_responses_transcript_streams_the_text_and_reports_exact_usage() {
    let server = TranscriptServer::one(Reply::sse(split_after(RESPONSES_TRANSCRIPT, "\n\n"))).await;
    let model = OpenAiResponses::builder("resp-test")
        .base_url(server.openai_base())
        .retry(RetryPolicy::none())
        .build()
        .expect("a Responses client");

    let events = events(run(&model).await);

    assert_eq!(
        events,
        [
            text_delta("Sun"),
            text_delta("ny in "),
            text_delta("Paris."),
            ModelEvent::Usage(Usage {
                input_tokens: 31,
                output_tokens: 7,
                ..Usage::default()
            }),
            ModelEvent::Finish(FinishReason::Stop),
        ]
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/responses");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(model.name(), "openai-responses:resp-test");
}
