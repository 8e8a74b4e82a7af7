//! Chat Completions: framing, how a turn ends, tool calls.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer, split_after, split_at_bytes};
use agentry::{FinishReason, ModelError, ModelEvent};
use agentry::{ModelErrorKind, OpenAi, Usage};
use agentry_models::RetryPolicy;
use std::time::{Duration, Instant};

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
