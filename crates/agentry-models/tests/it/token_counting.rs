//! The OpenAI clients size prompts with `tiktoken`, the encoding of their model; compaction
//! counts with it.

use agentry::prelude::*;
use agentry::{EstimateCounter, TokenCounter, prompt_tokens};
use agentry::{Model, OpenAi, OpenAiResponses, ScriptedTurn, agent::Compaction};
use agentry_models::Tiktoken;
use std::sync::{Arc, Mutex};

#[test]
fn openai_clients_count_with_their_models_encoding() {
    let gpt4o = OpenAi::builder("gpt-4o").api_key("k").build().unwrap();
    let counter = gpt4o.token_counter().expect("gpt-4o has an encoding");
    assert_eq!(counter.name(), "tiktoken:o200k_base");
    assert_eq!(counter.count("hello world"), 2);

    let gpt4 = OpenAiResponses::builder("gpt-4")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(gpt4.token_counter().unwrap().name(), "tiktoken:cl100k_base");

    // A model served by a compatible server that tiktoken does not know: the estimate is used.
    let other = OpenAi::builder("qwen2.5:7b").api_key("k").build().unwrap();
    assert!(other.token_counter().is_none());
}

#[test]
fn tiktoken_differs_from_the_estimate_on_real_text() {
    let text = "Ünïcödé, digits 1234567890 and code: fn main() { println!(\"hi\"); }";
    let real = Tiktoken::o200k().count(text);
    let estimate = EstimateCounter.count(text);
    assert!(real > 0 && real != estimate, "{real} vs {estimate}");
}

#[tokio::test]
async fn compaction_counts_the_prompt_with_the_configured_tokenizer() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::from_fn(|n, _| {
        if n <= 3 {
            ScriptedTurn::tool_call("note", json!({}))
        } else {
            ScriptedTurn::text("done")
        }
    });
    let seen2 = seen.clone();
    let agent = Agent::builder("counting")
        .instructions("Be brief.")
        .model(model)
        .tool(tool(
            "note",
            "Takes a note.",
            |_: Value, _: ToolCtx| async { Ok("note taken: ".repeat(30)) },
        ))
        .compaction(
            Compaction::window(200)
                .keep_recent(2)
                .counter(Tiktoken::o200k()),
        )
        .before_compact(move |ev, _| {
            let seen = seen2.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push((ev.tokens(), ev.messages().clone()));
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "Take notes.").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let seen = seen.lock().unwrap();
    let (tokens, messages) = seen.first().expect("a compaction");
    let expected = prompt_tokens(
        &Tiktoken::o200k(),
        Some("Be brief."),
        messages.iter(),
        &agent.def().specs,
    );
    assert_eq!(*tokens, expected);
}
