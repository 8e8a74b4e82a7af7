//! OpenAI Responses over recorded transcripts.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer, split_after};
use agentry::{FinishReason, ModelEvent};
use agentry::{Model, OpenAiResponses, Usage};
use agentry_models::RetryPolicy;

/// A recorded Responses turn of three text pieces.
pub(super) const RESPONSES_TRANSCRIPT: &str = r#"event: response.created
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
