//! Telemetry: an agent's run as OpenTelemetry spans, named and attributed as the GenAI semantic
//! conventions say.
//!
//! ```sh
//! cargo run -p agentry --example telemetry
//! ```
//!
//! The `Telemetry` hook emits `tracing` spans; `tracing-opentelemetry` turns them into
//! OpenTelemetry spans for the SDK's tracer provider. This example exports them to memory and
//! prints the tree; in a service, give the provider an OTLP exporter instead
//! (`opentelemetry-otlp`: `SpanExporter::builder().with_tonic().build()?` and
//! `.with_batch_exporter(exporter)`), and every run shows up in Jaeger, Tempo or Honeycomb.

use agentry::ScriptedTurn;
use agentry::builtins::Telemetry;
use agentry::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Set-up: a tracer provider with an exporter, and the tracing layer that feeds it.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("agentry")));
    tracing::subscriber::set_global_default(subscriber)?;

    let guide = Agent::builder("guide")
        .description("Suggests one thing to do in a city")
        .model(
            ScriptedModel::new().turn(
                ScriptedTurn::new()
                    .with_text("Ride tram 28.")
                    .with_usage(40, 6),
            ),
        )
        .build()?;
    let planner = Agent::builder("planner")
        .model(
            ScriptedModel::new()
                .turn(
                    ScriptedTurn::new()
                        .with_tool_call("guide", json!({"input": "Lisbon"}))
                        .with_usage(120, 12),
                )
                .turn(
                    ScriptedTurn::new()
                        .with_text("Ride tram 28 in Lisbon.")
                        .with_usage(150, 8),
                ),
        )
        .sub_agent(&guide)
        .build()?;

    // One hook on the runtime traces every run, sub-agent runs included.
    let runtime = Runtime::new().with(Telemetry::new());
    runtime.run(&planner, "One thing to do in Lisbon?").await?;

    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;
    let roots: Vec<&SpanData> = spans
        .iter()
        .filter(|s| {
            !spans
                .iter()
                .any(|p| p.span_context.span_id() == s.parent_span_id)
        })
        .collect();
    for root in roots {
        print_tree(&spans, root, 0);
    }
    Ok(())
}

/// Prints `span` and its children, with their `gen_ai.*` attributes.
fn print_tree(spans: &[SpanData], span: &SpanData, depth: usize) {
    let attrs: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| kv.key.as_str().starts_with("gen_ai."))
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    println!("{}{}  {}", "  ".repeat(depth), span.name, attrs.join(" "));
    let mut children: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == span.span_context.span_id())
        .collect();
    children.sort_by_key(|s| s.start_time);
    for child in children {
        print_tree(spans, child, depth + 1);
    }
}
