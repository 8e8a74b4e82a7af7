//! Full agent runs with tools against a real third-party server (aimock) over each of the three
//! protocols: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages. Each run streams
//! reasoning and text, gets two tool calls whose arguments arrive in many pieces, runs both
//! tools, sends the results back in the provider's shape, and ends with the final answer and
//! the provider's usage.

use crate::aimock::{Aimock, sorted, weather_agent};
use agentry::prelude::*;
use agentry::{
    Message, Model, Usage,
    hooks::{Thinking, on_sync},
};
use agentry::{ModelParams, ThinkingBlock, ToolCall};
use agentry_models::{Anthropic, OpenAi, OpenAiResponses};
use futures::StreamExt;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Runs the weather agent on `model` and checks what every provider must give: both tool calls
/// with their exact arguments, the final text, reasoning streamed, usage of both turns.
async fn run_weather(model: impl Model) -> RunOutput<(), String> {
    let thinking = Arc::new(Mutex::new(String::new()));
    let seen = thinking.clone();
    let (agent, calls) = weather_agent(model);
    let runtime = Runtime::new().with(on_sync::thinking(move |ev: &mut Thinking, _| {
        seen.lock().unwrap().push_str(&ev.text);
        Ok(())
    }));
    let out = runtime
        .run(&agent, "What's the weather in Paris? And the time?")
        .await
        .unwrap();
    assert_eq!(
        sorted(&calls),
        ["get_time(CET)", "get_weather(Paris,celsius)"]
    );
    assert_eq!(out.text, "It is sunny in Paris, and it is noon.");
    assert_eq!(out.model_calls, 2);
    assert_eq!(
        *thinking.lock().unwrap(),
        "The user wants the weather and the time."
    );
    out
}

/// The assistant message of the first turn, as the run recorded it.
fn first_turn(out: &RunOutput<(), String>) -> (String, Vec<ToolCall>, Option<ThinkingBlock>) {
    match &out.messages[1] {
        Message::Assistant {
            content,
            tool_calls,
            thinking,
        } => (
            content.text().into_owned(),
            tool_calls.clone(),
            thinking.clone(),
        ),
        other => panic!("expected the first model turn, got {other:?}"),
    }
}

#[tokio::test]
async fn chat_completions_agent_run_with_two_tool_calls() {
    // The server answers only requests that carry this key.
    let server = Aimock::start_with_env(&[("AIMOCK_API_KEYS", "sk-test-chat")]).await;
    let model = OpenAi::builder("o3")
        .base_url(server.openai_base())
        .api_key("sk-test-chat")
        .organization("org-42")
        .build()
        .unwrap();
    let out = run_weather(model).await;
    assert_eq!(out.usage, Usage::new(120, 22));
    let (text, calls, _) = first_turn(&out);
    assert_eq!(text, "Let me check.");
    assert_eq!(calls[0].arguments, r#"{"city":"Paris","unit":"celsius"}"#);

    let journal = server.journal().await;
    assert_eq!(journal.len(), 2);
    assert_eq!(journal[0]["path"], "/v1/chat/completions");
    let headers = &journal[0]["headers"];
    assert_eq!(headers["authorization"], "[REDACTED]");
    assert_eq!(headers["openai-organization"], "org-42");
    let first = &journal[0]["body"];
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"]["include_usage"], true);
    assert_eq!(
        first["messages"][0]["content"],
        "Answer weather questions with the tools."
    );
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    // The second request carries the assistant's calls and one tool message per call.
    let second = journal[1]["body"]["messages"].as_array().unwrap();
    let assistant = &second[2];
    assert_eq!(assistant["tool_calls"].as_array().unwrap().len(), 2);
    let ids: Vec<&Value> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    let answered: Vec<&Value> = second[3..].iter().map(|m| &m["tool_call_id"]).collect();
    assert_eq!(ids, answered);
    assert_eq!(second[3]["content"], "sunny in Paris");
}

#[tokio::test]
async fn responses_api_agent_run_with_two_tool_calls() {
    let server = Aimock::start().await;
    let model = OpenAiResponses::builder("o3")
        .base_url(server.openai_base())
        .api_key("sk-test-responses")
        .build()
        .unwrap();
    let out = run_weather(model).await;
    let (text, calls, thinking) = first_turn(&out);
    assert_eq!(text, "Let me check.");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].arguments, r#"{"tz":"CET"}"#);
    assert_eq!(
        thinking.unwrap().text,
        "The user wants the weather and the time."
    );

    let journal = server.journal().await;
    assert_eq!(journal.len(), 2);
    assert_eq!(journal[0]["path"], "/v1/responses");
    assert_normalized_second_request(&journal[1]["body"], &calls);
}

/// aimock's journal shows each request normalized to the Chat Completions shape, so a request
/// it could not read in the provider's own shape would show up here wrong: the system prompt,
/// the user turn, the assistant turn with both calls, and one tool result per call id. (It
/// shows a Responses turn as one assistant message per output item.)
fn assert_normalized_second_request(body: &Value, calls: &[ToolCall]) {
    let messages = body["messages"].as_array().unwrap();
    let mut roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    roles.dedup_by(|a, b| *a == "assistant" && *b == "assistant");
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool"],
        "{body:#}"
    );
    assert_eq!(
        messages[0]["content"],
        "Answer weather questions with the tools."
    );
    let sent: Vec<(&str, &str)> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| {
            (
                c["id"].as_str().unwrap(),
                c["function"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    let made: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(sent, made);
    let results: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (calls[0].id.as_str(), "sunny in Paris"),
            (calls[1].id.as_str(), "12:00")
        ]
    );
}

#[tokio::test]
async fn anthropic_agent_run_sends_signed_thinking_back_with_the_tool_results() {
    let server = Aimock::start_with_env(&[("AIMOCK_API_KEYS", "sk-ant-test")]).await;
    let model = Anthropic::builder("claude-sonnet-4-5")
        .base_url(&server.url)
        .api_key("sk-ant-test")
        .thinking(1024)
        .build()
        .unwrap();
    let out = run_weather(model).await;
    assert_eq!(out.usage.input_tokens, 120);
    assert_eq!(out.usage.output_tokens, 22);
    // The signed thinking block is kept verbatim, for the next request to send back.
    let (_, _, thinking) = first_turn(&out);
    let thinking = thinking.unwrap();
    assert!(thinking.signature.as_deref().is_some_and(|s| !s.is_empty()));
    let replay = thinking.replay.unwrap();
    assert_eq!(replay[0]["type"], "thinking");
    assert_eq!(replay[0]["thinking"], thinking.text.as_str());

    let journal = server.journal().await;
    assert_eq!(journal.len(), 2);
    assert_eq!(journal[0]["path"], "/v1/messages");
    let headers = &journal[0]["headers"];
    assert_eq!(headers["x-api-key"], "[REDACTED]");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    let (_, calls, _) = first_turn(&out);
    assert_normalized_second_request(&journal[1]["body"], &calls);
}

#[tokio::test]
async fn streamed_text_reaches_the_run_events_in_pieces() {
    let server = Aimock::start().await;
    let model = OpenAi::builder("gpt-4.1")
        .base_url(server.openai_base())
        .build()
        .unwrap();
    let (agent, _) = weather_agent(model);
    let mut handle = Runtime::new()
        .run(&agent, "What's the weather in Paris?")
        .start();
    let mut pieces = Vec::new();
    while let Some(event) = handle.events().next().await {
        if let RunEvent::TextDelta { text, .. } = event {
            pieces.push(text);
        }
    }
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert!(pieces.len() > 5, "text should stream in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), format!("Let me check.{}", out.text));
}

#[tokio::test]
async fn model_parameters_reach_the_request_body() {
    let server = Aimock::start().await;
    let mut defaults = ModelParams::default();
    defaults.extra.insert("seed".into(), 11.into());
    let model = OpenAi::builder("gpt-4.1")
        .base_url(server.openai_base())
        .params(defaults)
        .build()
        .unwrap();
    let agent = Agent::builder("params")
        .model(model)
        .params(ModelParams {
            temperature: Some(0.25),
            max_tokens: Some(77),
            stop: vec!["END".into()],
            ..ModelParams::default()
        })
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "hello").await.unwrap();
    assert_eq!(out.text, "Hello there!");
    let body = &server.request_bodies().await[0];
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["max_tokens"], 77);
    assert_eq!(body["stop"], serde_json::json!(["END"]));
    assert_eq!(body["seed"], 11);
}

#[tokio::test]
async fn azure_style_deployment_urls_with_api_version_and_api_key_header() {
    let server = Aimock::start_with_env(&[("AIMOCK_API_KEYS", "azure-key")]).await;
    let model = OpenAi::builder("gpt-4.1")
        .base_url(format!("{}/openai/deployments/my-deployment", server.url))
        .query("api-version", "2024-10-21")
        .api_key_header("api-key")
        .api_key("azure-key")
        .build()
        .unwrap();
    let agent = Agent::builder("azure").model(model).build().unwrap();
    let out = Runtime::new().run(&agent, "hello").await.unwrap();
    assert_eq!(out.text, "Hello there!");
    let journal = server.journal().await;
    assert_eq!(
        journal[0]["path"],
        "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(journal[0]["headers"]["api-key"], "[REDACTED]");
    assert!(journal[0]["headers"].get("authorization").is_none());
}
