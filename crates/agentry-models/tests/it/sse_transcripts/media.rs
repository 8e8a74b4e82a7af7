//! Images, documents and audio in requests: the body each provider is sent, compared with the
//! shape its API documents, and the error (with no request sent) for a part it cannot take.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer, split_after};
use agentry::content::{Media, Part};
use agentry::{Anthropic, ModelErrorKind, OpenAiResponses, ToolResult};
use agentry_models::RetryPolicy;
use serde_json::{Value, json};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUg==";
const PDF: &[u8] = b"%PDF-1.7\n";
const PDF_B64: &str = "JVBERi0xLjcK";

/// A conversation with an image, a PDF and an image URL from the user, and a tool that
/// answered with text and an image.
fn conversation() -> ModelRequest {
    let ask = Message::user([
        Part::text("What is in these?"),
        Part::image(PNG, "image/png"),
        Part::file(PDF, "application/pdf", "invoice.pdf"),
        Part::image_url("https://example.com/cat.jpg"),
    ]);
    let call = Message::Assistant {
        content: Default::default(),
        thinking: None,
        tool_calls: vec![ToolCall::new("c1", "chart", &json!({}))],
    };
    let result = Message::Tool(ToolResult::ok(
        "c1",
        "chart",
        [Part::text("the chart:"), Part::image(PNG, "image/png")],
    ));
    ModelRequest::new([ask, call, result].into_iter().collect())
}

fn with_part(part: Part) -> ModelRequest {
    ModelRequest::new(
        [Message::user([Part::text("listen"), part])]
            .into_iter()
            .collect(),
    )
}

async fn body_sent(model: &dyn Model, server: &TranscriptServer, request: ModelRequest) -> Value {
    let outcome: Outcome = model.stream(&request).collect().await;
    events(outcome);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    seen[0].body.clone()
}

fn chat_model(server: &TranscriptServer) -> OpenAi {
    OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

fn responses_model(server: &TranscriptServer) -> OpenAiResponses {
    OpenAiResponses::builder("resp-test")
        .base_url(server.openai_base())
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

fn anthropic_model(server: &TranscriptServer) -> Anthropic {
    Anthropic::builder("claude-test")
        .api_key("k")
        .base_url(&server.url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn chat_completions_get_content_parts_and_tool_images_after_the_tool_messages() {
    let server = TranscriptServer::one(chat_turn("a cat and an invoice")).await;
    let body = body_sent(&chat_model(&server), &server, conversation()).await;
    let png_url = format!("data:image/png;base64,{PNG_B64}");
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": png_url}},
            {"type": "file", "file": {
                "filename": "invoice.pdf",
                "file_data": format!("data:application/pdf;base64,{PDF_B64}"),
            }},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        ]})
    );
    // A tool message takes text only: the image follows the tool messages, introduced.
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "the chart:"})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The result of tool call c1 (chart) carries these attachments:"},
            {"type": "image_url", "image_url": {"url": png_url}},
        ]})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn chat_completions_take_wav_and_mp3_as_input_audio() {
    let server = TranscriptServer::one(chat_turn("hello")).await;
    let request = with_part(Part::audio(b"RIFF\0\0\0\0WAVE".to_vec(), "audio/wav"));
    let body = body_sent(&chat_model(&server), &server, request).await;
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"type": "input_audio", "input_audio": {"data": "UklGRgAAAABXQVZF", "format": "wav"}})
    );
}

#[tokio::test]
async fn responses_get_input_parts_and_tool_outputs_with_images() {
    let server = TranscriptServer::one(Reply::sse(split_after(
        responses::RESPONSES_TRANSCRIPT,
        "\n\n",
    )))
    .await;
    let body = body_sent(&responses_model(&server), &server, conversation()).await;
    let png_url = format!("data:image/png;base64,{PNG_B64}");
    assert_eq!(
        body["input"][0],
        json!({"role": "user", "content": [
            {"type": "input_text", "text": "What is in these?"},
            {"type": "input_image", "image_url": png_url, "detail": "auto"},
            {"type": "input_file", "filename": "invoice.pdf",
             "file_data": format!("data:application/pdf;base64,{PDF_B64}")},
            {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
        ]})
    );
    assert_eq!(
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_text", "text": "the chart:"},
            {"type": "input_image", "image_url": png_url, "detail": "auto"},
        ]})
    );
}

#[tokio::test]
async fn anthropic_gets_image_and_document_blocks_inside_tool_results_too() {
    let server = TranscriptServer::one(Reply::sse(split_after(
        anthropic::ANTHROPIC_TRANSCRIPT,
        "\n\n",
    )))
    .await;
    let body = body_sent(&anthropic_model(&server), &server, conversation()).await;
    let png = json!({"type": "image", "source":
        {"type": "base64", "media_type": "image/png", "data": PNG_B64}});
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            png,
            {"type": "document", "title": "invoice.pdf", "source":
                {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        ]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [{"type": "text", "text": "the chart:"}, png],
            "is_error": false,
        }]})
    );
}

#[tokio::test]
async fn anthropic_takes_plain_text_files_as_text_documents() {
    let server = TranscriptServer::one(Reply::sse(split_after(
        anthropic::ANTHROPIC_TRANSCRIPT,
        "\n\n",
    )))
    .await;
    let request = with_part(Part::file(b"a,b\n1,2\n".to_vec(), "text/csv", "t.csv"));
    let body = body_sent(&anthropic_model(&server), &server, request).await;
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"type": "document", "title": "t.csv", "source":
            {"type": "text", "media_type": "text/plain", "data": "a,b\n1,2\n"}})
    );
}

/// Parts a provider cannot take fail the turn before anything is sent, with an error that
/// names the part, the provider and what to do.
#[tokio::test]
async fn parts_a_provider_cannot_take_are_refused_before_sending() {
    let flac = || Part::audio(b"fLaC....".to_vec(), "audio/flac");
    let reference = Part::Image(Media {
        media_type: "image/png".into(),
        source: agentry::content::MediaSource::Bytes(agentry::content::Blob::new(PNG).reference()),
        name: None,
    });
    let server = TranscriptServer::one(chat_turn("never")).await;
    let cases: Vec<(Box<dyn Model>, Part, &[&str])> = vec![
        (
            Box::new(chat_model(&server)),
            flac(),
            &[
                "OpenAI Chat Completions",
                "audio part [audio audio/flac",
                "WAV or MP3",
            ],
        ),
        (
            Box::new(chat_model(&server)),
            Part::File(Media::url("https://example.com/a.pdf", "application/pdf")),
            &["OpenAI Chat Completions", "file part", "not URLs"],
        ),
        (
            Box::new(responses_model(&server)),
            flac(),
            &["Responses API", "audio part", "no audio input"],
        ),
        (
            Box::new(anthropic_model(&server)),
            flac(),
            &["Anthropic Messages", "audio part", "in a user message"],
        ),
        (
            Box::new(anthropic_model(&server)),
            Part::image(b"BM....".to_vec(), "image/bmp"),
            &["Anthropic Messages", "image/bmp", "JPEG, PNG, GIF or WebP"],
        ),
        (
            Box::new(anthropic_model(&server)),
            Part::file(b"PK\x03\x04".to_vec(), "application/zip", "a.zip"),
            &["Anthropic Messages", "a.zip", "PDFs or plain text"],
        ),
        (
            Box::new(chat_model(&server)),
            reference,
            &["not loaded", "SHA-256"],
        ),
    ];
    for (model, part, says) in cases {
        let outcome: Outcome = model.stream(&with_part(part)).collect().await;
        let (events, error) = failure(outcome);
        assert!(events.is_empty());
        assert_eq!(error.kind, ModelErrorKind::InvalidRequest, "{error}");
        for said in says {
            assert!(error.message.contains(said), "`{said}` in: {error}");
        }
    }
    assert_eq!(server.hits(), 0, "nothing was sent");
}

#[tokio::test]
async fn an_assistant_turn_with_an_image_is_refused_by_every_provider() {
    let server = TranscriptServer::one(chat_turn("never")).await;
    let request = ModelRequest::new(
        [
            Message::user("draw"),
            Message::assistant([Part::image(PNG, "image/png")]),
            Message::user("again"),
        ]
        .into_iter()
        .collect(),
    );
    let models: Vec<Box<dyn Model>> = vec![
        Box::new(chat_model(&server)),
        Box::new(responses_model(&server)),
        Box::new(anthropic_model(&server)),
    ];
    for model in models {
        let (_, error) = failure(model.stream(&request).collect().await);
        assert!(error.message.contains("an assistant message"), "{error}");
    }
    assert_eq!(server.hits(), 0);
}
