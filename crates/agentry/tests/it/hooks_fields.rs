//! What a hook writes, the run honours: an AfterTool rewrite reaches the model (but the result
//! always answers the call that was made), and a ToolFailed's or SubAgentFailed's rewritten error
//! is what the model hears. (The fields hooks cannot honour are read-only: agentry-core's
//! `read_only_fields` test pins that they do not compile.)

use crate::common::*;
use agentry::ThinkingBlock;
use agentry::prelude::*;
use agentry::{
    Message, ModelErrorKind, ScriptedTurn, Tool, ToolFailure, ToolResult, hooks::on_sync,
};

/// The tool result the model received in its request `n`.
fn result_sent(model: &ScriptedModel, n: usize) -> ToolResult {
    model.requests()[n]
        .messages
        .last()
        .and_then(|m| m.tool_result().cloned())
        .expect("the last message is a tool result")
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

fn failing() -> impl Tool {
    tool("fails", "Fails.", |_: Nothing, _ctx: ToolCtx| async move {
        Err::<String, _>("disk quota exceeded at /var/secret/path".into())
    })
}

#[tokio::test]
async fn an_after_tool_rewrite_reaches_the_model_and_the_result_answers_the_real_call() {
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(weather(&new_log(), &Counter::default()))
        .after_tool(|mut ev, _ctx| async move {
            assert_eq!((ev.name(), ev.call_id()), ("get_weather", "call_1_1"));
            ev.content = format!("{} (checked)", ev.content).into();
            ev.is_error = true;
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Paris?").await.unwrap();

    let sent = result_sent(&model, 1);
    assert_eq!(sent.content, "Sunny in Paris (checked)");
    assert!(sent.is_error);
    assert_eq!(
        (sent.call_id.as_str(), sent.name.as_str()),
        ("call_1_1", "get_weather")
    );
}

#[tokio::test]
async fn a_tool_error_rewritten_by_a_hook_is_what_the_model_hears() {
    let model = ScriptedModel::new()
        .tool_call("fails", json!({}))
        .text("ok");
    let seen = new_log();
    let s = seen.clone();
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(failing())
        .with(on_sync::tool_failed(|ev, _| {
            // Inner (lower priority) hook: hides the path from the model.
            ev.rewrite_error("the tool failed: out of space");
            Ok(())
        }))
        .with(
            on_sync::tool_failed(move |ev, _| {
                // Outer hook: still sees what happened, and the rewrite.
                push(&s, format!("{} | {:?}", ev.error(), ev.rewritten_error()));
                Ok(())
            })
            .priority(10),
        )
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Go.").await.unwrap();

    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert_eq!(sent.content, "the tool failed: out of space");
    assert_eq!(
        entries(&seen),
        [r#"disk quota exceeded at /var/secret/path | Some("the tool failed: out of space")"#]
    );
}

#[tokio::test]
async fn a_sub_agent_error_rewritten_by_a_hook_is_what_the_parent_model_hears() {
    let child = Agent::builder("child")
        .description("Fails.")
        .model(ScriptedModel::new().error(ModelErrorKind::Server, "upstream 503 at 10.0.0.7"))
        .build()
        .unwrap();
    let model = ScriptedModel::new()
        .tool_call("child", json!({"input": "go"}))
        .text("ok");
    let parent = Agent::builder("parent")
        .model(model.clone())
        .sub_agent(&child)
        .with(on_sync::sub_agent_failed(|ev, _| {
            assert!(ev.error().contains("10.0.0.7"), "{}", ev.error());
            ev.rewrite_error(format!("`{}` is unavailable; try later", ev.agent()));
            Ok(())
        }))
        .build()
        .unwrap();

    Runtime::new().run(&parent, "Go.").await.unwrap();

    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert_eq!(sent.content, "`child` is unavailable; try later");
}

/// The tool results the model received in its request `n`.
fn results_sent(model: &ScriptedModel, n: usize) -> Vec<ToolResult> {
    tool_results(&model.requests()[n].messages)
}

/// A tool that always fails with `message`.
fn failing_with(name: &str, message: &'static str) -> impl Tool + use<> {
    tool(
        name.to_string(),
        "Always fails",
        move |_: Nothing, _ctx: ToolCtx| async move { Err::<String, _>(ToolFailure::new(message)) },
    )
}

#[tokio::test]
async fn a_tool_error_recovery_wins_over_a_rewritten_error() {
    let model = ScriptedModel::new()
        .turn(ScriptedTurn::new().with_tool_call_id("b-1", "broken", json!({})))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(failing_with("broken", "connection reset"))
        .tool_failed(|mut ev, _ctx| async move {
            ev.rewrite_error("the service is unavailable");
            Ok(ev)
        })
        .tool_failed(|mut ev, _ctx| async move {
            ev.recover("a cached answer");
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "go").await.unwrap();

    assert_eq!(
        results_sent(&model, 1),
        [ToolResult::ok("b-1", "broken", "a cached answer")]
    );
}

#[tokio::test]
async fn around_tool_middleware_rewrites_the_input_the_tool_receives() {
    let (log, calls) = (new_log(), Counter::default());
    let model = ScriptedModel::new()
        .turn(ScriptedTurn::new().with_tool_call_id("w-1", "get_weather", json!({"city": "Paris"})))
        .text("ok");
    let l = log.clone();
    let agent = Agent::builder("planner")
        .model(model.clone())
        .tool(weather(&log, &calls))
        .around_tool(move |mut call, next| {
            push(&l, format!("mw:{} {}", call.call_id(), call.name()));
            call.input = json!({"city": "Lyon"});
            next.run(call)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(entries(&log), ["mw:w-1 get_weather", "tool:Lyon"]);
    assert_eq!(
        results_sent(&model, 1),
        [ToolResult::ok("w-1", "get_weather", "Sunny in Lyon")]
    );
}

#[tokio::test]
async fn thinking_hooks_rewrite_the_reasoning_the_history_keeps() {
    let model = ScriptedModel::new().turn(
        ScriptedTurn::new()
            .with_thinking("the key is sk-123; ")
            .with_thinking("answer briefly")
            .with_text("Done."),
    );
    let agent = Agent::builder("a")
        .model(model)
        .with(on_sync::thinking(|ev, _ctx| {
            if ev.text.contains("sk-") {
                ev.text = "the key is [redacted]; ".into();
            }
            Ok(())
        }))
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "go").await.unwrap();

    let thinking = out.messages.iter().find_map(|m| match m {
        Message::Assistant {
            thinking: Some(ThinkingBlock { text, .. }),
            ..
        } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(
        thinking.as_deref(),
        Some("the key is [redacted]; answer briefly")
    );
}
