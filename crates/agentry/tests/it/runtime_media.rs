//! Images, documents and audio through a run: the input's parts reach the model in order, a
//! tool returns an image the model sees, hooks inspect, drop and redact parts, the redactor
//! masks text parts, and spans record each part's kind, type and size but never its bytes.

use agentry::builtins::{Redactor, Telemetry};
use agentry::content::Part;
use agentry::prelude::*;
use agentry::{Content, Message, ToolFailure};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;

const SECRET: &str = "hunter2-hunter2";

fn png(len: usize) -> Part {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(len, 0x42);
    Part::image(bytes, "image/png")
}

/// A tool that draws a chart: text and an image.
fn chart() -> impl agentry::Tool {
    tool(
        "chart",
        "Draws a chart.",
        |_: Value, _ctx: ToolCtx| async move {
            Ok::<_, ToolFailure>(Content::from([Part::text("the chart:"), png(2_000)]))
        },
    )
}

fn agent(model: &ScriptedModel) -> Agent {
    Agent::builder("viewer")
        .model(model.clone())
        .tool(chart())
        .build()
        .unwrap()
}

#[tokio::test]
async fn parts_reach_the_model_in_order_and_a_tools_image_comes_back_to_it() {
    let model = ScriptedModel::new()
        .tool_call("chart", json!({}))
        .text("a cat, and a chart")
        .record_requests(true);
    let input = [
        Part::text("what is this?"),
        png(1_000),
        Part::pdf(b"%PDF-1.7".to_vec()),
    ];
    let out = Runtime::new()
        .run(&agent(&model), input.clone())
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("a cat, and a chart"));
    let requests = model.requests();
    assert_eq!(requests[0].messages[0], Message::user(input));
    let result = requests[1].messages.last().unwrap().tool_result().unwrap();
    assert_eq!(
        result.content.parts()[1],
        png(2_000),
        "the tool's image, bytes and all"
    );
}

#[tokio::test]
async fn hooks_drop_large_images_and_the_redactor_masks_text_parts() {
    let model = ScriptedModel::new().text("ok").record_requests(true);
    let runtime = Runtime::new()
        .redact(Redactor::new().secret(SECRET))
        .with(on::run_start(|mut ev, _ctx| async move {
            // No image over 10 kB reaches the model: it is replaced by a note.
            for part in ev.input.parts_mut() {
                if let Part::Image(m) = part
                    && m.size() > Some(10_000)
                {
                    *part = Part::text(format!(
                        "(an image of {} bytes was left out)",
                        m.size().unwrap()
                    ));
                }
            }
            Ok(ev)
        }));
    let mut handle = runtime
        .run(
            &agent(&model),
            [
                Part::text(format!("my password is {SECRET}")),
                png(50_000),
                png(500),
            ],
        )
        .start();
    let mut events = Vec::new();
    while let Some(e) = handle.events().next().await {
        events.push(e);
    }
    handle.result().await.unwrap();
    let sent = &model.requests()[0].messages[0];
    let parts = sent.content().unwrap().parts();
    assert_eq!(
        parts[1],
        Part::text("(an image of 50000 bytes was left out)")
    );
    assert_eq!(parts[2], png(500), "the small image stays");
    // The events carry the text masked; the model got the real value.
    let shown = format!("{events:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("my password is [REDACTED]"));
    assert_eq!(parts[0], Part::text(format!("my password is {SECRET}")));
}

#[tokio::test]
async fn spans_record_each_parts_kind_type_and_size_never_its_bytes() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("media-test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    let model = ScriptedModel::new()
        .tool_call("chart", json!({}))
        .text("done");
    Runtime::new()
        .with(Telemetry::new())
        .run(&agent(&model), [Part::text("look"), png(1_000)])
        .await
        .unwrap();
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let attribute = |span: &str, key: &str| {
        spans
            .iter()
            .filter(|s| s.name.starts_with(span))
            .flat_map(|s| s.attributes.iter())
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(
        attribute("invoke_agent", "agentry.input.media").as_deref(),
        Some("image image/png 1000 B")
    );
    assert_eq!(
        attribute("execute_tool", "agentry.result.media").as_deref(),
        Some("image image/png 2000 B")
    );
    // The bytes (0x42 = 'B'; base64 runs of "QkJC") are in no span.
    for span in &spans {
        assert!(!format!("{span:?}").contains("QkJCQkJC"), "{span:?}");
    }
}
