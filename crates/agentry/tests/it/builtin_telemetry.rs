//! The telemetry hook through OpenTelemetry (tracing-opentelemetry into the SDK's in-memory
//! exporter): the span tree, with a sub-agent nested under its tool call, and the GenAI
//! semantic-convention attribute names and values.

use agentry::builtins::Telemetry;
use agentry::prelude::*;
use agentry::{ModelParams, RunOptions, ScriptedTurn};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{SpanId, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

fn attr(span: &SpanData, name: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == name)
        .map(|kv| kv.value.clone())
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found = named(spans, name);
    assert_eq!(
        found.len(),
        1,
        "one span `{name}` in {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

fn parent_of<'a>(spans: &'a [SpanData], span: &SpanData) -> Option<&'a SpanData> {
    let parent: SpanId = span.parent_span_id;
    spans.iter().find(|s| s.span_context.span_id() == parent)
}

#[tokio::test]
async fn runs_steps_model_and_tool_calls_become_a_span_tree_with_gen_ai_attributes() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("agentry-test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let child = Agent::builder("child")
        .description("Answers.")
        .model(ScriptedModel::new().turn(ScriptedTurn::new().with_text("42").with_usage(30, 3)))
        .build()
        .unwrap();
    let parent = Agent::builder("parent")
        .model(
            ScriptedModel::new()
                .turn(
                    ScriptedTurn::new()
                        .with_tool_call("child", json!({"input": "?"}))
                        .with_usage(100, 10),
                )
                .turn(
                    ScriptedTurn::new()
                        .with_text("It is 42.")
                        .with_usage(120, 5),
                ),
        )
        .sub_agent(&child)
        .params(ModelParams {
            temperature: Some(0.5),
            max_tokens: Some(256),
            ..ModelParams::default()
        })
        .build()
        .unwrap();
    Runtime::new()
        .with(Telemetry::new())
        .run(&parent, "go")
        .with(RunOptions::new().session("s-1"))
        .await
        .unwrap();
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    // The tree: parent run > step > chat / execute_tool child > child run > step > chat.
    let run = one(&spans, "invoke_agent parent");
    assert!(
        parent_of(&spans, run).is_none(),
        "the root run has no parent"
    );
    let steps = named(&spans, "step");
    assert_eq!(steps.len(), 3, "two parent steps and one child step");
    let tool = one(&spans, "execute_tool child");
    let tool_step = parent_of(&spans, tool).unwrap();
    assert_eq!(tool_step.name, "step");
    assert_eq!(
        parent_of(&spans, tool_step).unwrap().name,
        "invoke_agent parent"
    );
    let child_run = one(&spans, "invoke_agent child");
    assert_eq!(
        parent_of(&spans, child_run).unwrap().span_context.span_id(),
        tool.span_context.span_id()
    );
    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 3);
    for chat in &chats {
        assert_eq!(parent_of(&spans, chat).unwrap().name, "step");
    }
    let child_chat = chats
        .iter()
        .find(|c| {
            parent_of(&spans, parent_of(&spans, c).unwrap())
                .unwrap()
                .name
                == "invoke_agent child"
        })
        .expect("the child's model call is under the child's step");

    // The attribute names of the GenAI conventions.
    assert_eq!(
        attr(run, "gen_ai.operation.name"),
        Some("invoke_agent".into())
    );
    assert_eq!(attr(run, "gen_ai.agent.name"), Some("parent".into()));
    assert_eq!(attr(run, "gen_ai.conversation.id"), Some("s-1".into()));
    assert_eq!(attr(run, "gen_ai.usage.input_tokens"), Some(220i64.into()));
    assert_eq!(attr(run, "gen_ai.usage.output_tokens"), Some(15i64.into()));
    assert_eq!(
        attr(child_chat, "gen_ai.operation.name"),
        Some("chat".into())
    );
    assert_eq!(
        attr(child_chat, "gen_ai.request.model"),
        Some("scripted".into())
    );
    assert_eq!(
        attr(child_chat, "gen_ai.usage.input_tokens"),
        Some(30i64.into())
    );
    assert_eq!(
        attr(child_chat, "gen_ai.usage.output_tokens"),
        Some(3i64.into())
    );
    assert_eq!(
        attr(child_chat, "gen_ai.response.finish_reasons"),
        Some(r#"["stop"]"#.into())
    );
    let first_chat = chats
        .iter()
        .find(|c| attr(c, "gen_ai.usage.input_tokens") == Some(100i64.into()))
        .unwrap();
    assert_eq!(
        attr(first_chat, "gen_ai.request.temperature"),
        Some(0.5f64.into())
    );
    assert_eq!(
        attr(first_chat, "gen_ai.request.max_tokens"),
        Some(256i64.into())
    );
    assert_eq!(
        attr(first_chat, "gen_ai.response.finish_reasons"),
        Some(r#"["tool_calls"]"#.into())
    );
    assert_eq!(
        attr(tool, "gen_ai.operation.name"),
        Some("execute_tool".into())
    );
    assert_eq!(attr(tool, "gen_ai.tool.name"), Some("child".into()));
    assert!(attr(tool, "gen_ai.tool.call.id").is_some());
    assert_eq!(attr(tool, "error.type"), None);
}
