//! A whole agent run on the local model (SmolLM2-135M): text streamed as run events and through
//! TextDelta hooks, the typed result, and a tool-declaring agent whose model answers in prose.

use crate::common::smollm2;
use agentry::ModelParams;
use agentry::prelude::*;
use std::sync::{Arc, Mutex};

#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

#[tokio::test]
async fn an_agent_on_the_local_model_streams_its_answer() {
    let seen_by_hook = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = seen_by_hook.clone();
    let agent = Agent::builder("greeter")
        .instructions("You are a friendly assistant. Answer in one short sentence.")
        .model(smollm2().await)
        .params(ModelParams {
            max_tokens: Some(32),
            ..ModelParams::default()
        })
        .with(on::text_delta(move |ev, _ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(ev.text.clone());
                Ok(ev)
            }
        }))
        .build()
        .unwrap();
    let mut run = Runtime::new().run(&agent, "Say hello to Ada.").start();
    let mut streamed = String::new();
    let mut pieces = 0;
    while let Some(event) = run.events().next().await {
        if let RunEvent::TextDelta {
            text, agent_path, ..
        } = event
        {
            assert_eq!(agent_path.to_string(), "greeter");
            streamed.push_str(&text);
            pieces += 1;
        }
    }
    let result = run.result().await.unwrap();
    let output = result.output.clone().expect("a final answer");
    assert!(pieces > 2, "{pieces} pieces");
    assert_eq!(output, streamed);
    assert_eq!(seen_by_hook.lock().unwrap().concat(), streamed);
    assert!(!output.trim().is_empty());
    assert_eq!(result.steps, 1);
    assert_eq!(result.stop, StopReason::FinalAnswer);
    assert!(
        result.usage.input_tokens > 20 && result.usage.output_tokens > 0,
        "{:?}",
        result.usage
    );
}

#[tokio::test]
async fn a_tool_declaring_agent_gets_prose_when_the_model_writes_no_call() {
    let calls = Arc::new(Mutex::new(0));
    let counter = calls.clone();
    let weather = tool(
        "get_weather",
        "Today's weather for a city",
        move |a: City, _ctx: ToolCtx| {
            let counter = counter.clone();
            async move {
                *counter.lock().unwrap() += 1;
                Ok(format!("sunny in {}", a.city))
            }
        },
    );
    let agent = Agent::builder("chat")
        .instructions("Answer briefly.")
        .model(smollm2().await)
        .params(ModelParams {
            max_tokens: Some(24),
            ..ModelParams::default()
        })
        .tool(weather)
        .build()
        .unwrap();
    let result = Runtime::new()
        .run(&agent, "Tell me a fun fact about owls.")
        .await
        .unwrap();
    let output: String = result.output.expect("a final answer");
    // Whatever the small model wrote, no declared call with valid arguments came of it here,
    // so its text is the answer, and held-back text (from a `{` or a fence on) is not lost.
    assert_eq!(*calls.lock().unwrap(), 0);
    assert!(!output.trim().is_empty());
    let last = result.messages.last().unwrap();
    assert_eq!(last.text(), output);
}
