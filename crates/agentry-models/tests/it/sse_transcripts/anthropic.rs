//! Anthropic Messages over recorded transcripts.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer, split_after};
use agentry::{Anthropic, ModelErrorKind, Usage};
use agentry::{FinishReason, ModelEvent};
use agentry_models::RetryPolicy;
use std::time::Duration;

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
pub(super) const ANTHROPIC_TRANSCRIPT: &str = r#"event: message_start
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
