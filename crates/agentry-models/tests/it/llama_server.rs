//! Opt-in: an agent over each of the three protocols against llama.cpp's `llama-server` running
//! a real small model (SmolLM2-135M-Instruct) on the CPU, with streamed text.
//!
//! Run it with `bash scripts/llama-server-suite.sh`, which builds the server, fetches the model,
//! starts the server and points `AGENTRY_LLAMA_SERVER` at it.

use agentry::prelude::*;
use agentry::{Model, ModelParams};
use agentry_models::{Anthropic, OpenAi, OpenAiResponses};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Instant;

fn server() -> String {
    std::env::var("AGENTRY_LLAMA_SERVER")
        .expect("AGENTRY_LLAMA_SERVER is not set: run `bash scripts/llama-server-suite.sh`")
}

/// Runs a one-turn agent on `model`, streaming its text, and checks the run.
async fn streams_an_answer(model: Arc<dyn Model>) {
    let name = model.name().to_owned();
    let agent = Agent::builder("greeter")
        .instructions("You are a friendly assistant. Answer in one short sentence.")
        .model_arc(model)
        .params(ModelParams {
            max_tokens: Some(48),
            temperature: Some(0.0),
            ..ModelParams::default()
        })
        .build()
        .unwrap();
    let started = Instant::now();
    let mut handle = Runtime::new()
        .run(&agent, "Say hello to a new user.")
        .start();
    let mut pieces = 0;
    let mut streamed = String::new();
    while let Some(event) = handle.events().next().await {
        if let RunEvent::TextDelta { text, .. } = event {
            pieces += 1;
            streamed.push_str(&text);
        }
    }
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    println!(
        "{name}: {pieces} pieces, {} in / {} out tokens, {:.2} s: {:?}",
        out.usage.input_tokens,
        out.usage.output_tokens,
        started.elapsed().as_secs_f64(),
        out.text
    );
    assert!(pieces > 1, "{name}: the text should stream in pieces");
    assert_eq!(streamed, out.text, "{name}");
    assert!(!out.text.trim().is_empty(), "{name}: empty answer");
    assert!(out.usage.output_tokens > 0, "{name}: no usage");
}

#[tokio::test]
#[ignore = "opt-in: bash scripts/llama-server-suite.sh"]
async fn chat_completions_against_llama_server() {
    let model = OpenAi::builder("smollm2")
        .base_url(format!("{}/v1", server()))
        .build()
        .unwrap();
    streams_an_answer(Arc::new(model)).await;
}

#[tokio::test]
#[ignore = "opt-in: bash scripts/llama-server-suite.sh"]
async fn responses_api_against_llama_server() {
    let model = OpenAiResponses::builder("smollm2")
        .base_url(format!("{}/v1", server()))
        .build()
        .unwrap();
    streams_an_answer(Arc::new(model)).await;
}

#[tokio::test]
#[ignore = "opt-in: bash scripts/llama-server-suite.sh"]
async fn anthropic_messages_against_llama_server() {
    let model = Anthropic::builder("smollm2")
        .base_url(server())
        .api_key("unused")
        .build()
        .unwrap();
    streams_an_answer(Arc::new(model)).await;
}
