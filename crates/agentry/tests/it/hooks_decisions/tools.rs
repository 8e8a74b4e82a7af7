//! BeforeTool, AfterTool and ToolFailed decisions: block, mock, rewrite, recover.

use super::*;
use agentry::{ToolFailure, ToolResult};

#[tokio::test]
async fn tool_started_carries_the_input_after_before_tool_hooks() {
    use futures::StreamExt;
    let (log, calls) = (new_log(), Counter::default());
    let agent = weather_agent(&paris_then("Fine."), &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"city": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();
    let mut run = Runtime::new().run(&agent, "Paris?").start();
    let mut started = Vec::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::ToolStarted { input, .. } = ev {
            started.push(input);
        }
    }
    run.result().await.unwrap();
    assert_eq!(started, [json!({"city": "Rome"})]);
    assert_eq!(entries(&log), ["tool:Rome"], "the tool got the same input");
}

#[tokio::test]
async fn before_tool_block_keeps_the_tool_from_running_and_the_model_sees_the_reason() {
    let (log, calls, later) = (new_log(), Counter::default(), Counter::default());
    let model = paris_then("Cannot check.");
    let after = new_log();
    let after_seen = after.clone();
    let later_hook = later.clone();
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            if ev.input["city"] == "Paris" {
                ev.block("Paris is off limits today");
            }
            Ok(ev)
        })
        .before_tool(move |mut ev, _ctx| {
            // A later hook sees the blocked call; what it does to it is dropped.
            later_hook.bump();
            assert_eq!(
                format!("{:?}", ev.decision()),
                r#"Some(Block("Paris is off limits today"))"#
            );
            ev.input = json!({"city": "Rome"});
            ev.mock("a later mock");
            async move { Ok(ev) }
        })
        .after_tool(move |ev, _ctx| {
            push(&after_seen, format!("{} error={}", ev.content, ev.is_error));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Cannot check."));
    assert_eq!(calls.get(), 0, "a blocked tool must not run");
    assert_eq!(
        later.get(),
        1,
        "every hook sees the event; the block stands"
    );
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert!(!sent.mocked);
    assert_eq!(sent.content, "Paris is off limits today");
    assert_eq!(sent.call_id, "call_1_1");
    // AfterTool still sees the (blocked) result.
    assert_eq!(entries(&after), ["Paris is off limits today error=true"]);
}

#[tokio::test]
async fn before_tool_mock_answers_the_call_and_the_first_mock_stands() {
    let (log, calls, second) = (new_log(), Counter::default(), Counter::default());
    let model = paris_then("Rainy, stay.");
    let second_hook = second.clone();
    let agent = weather_agent(&model, &log, &calls)
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                ev.mock("Rain in Paris");
                Ok(ev)
            })
            .named("mock-weather"),
        )
        .with(
            on::before_tool(move |mut ev, _ctx| {
                second_hook.bump();
                async move {
                    ev.mock("second mock");
                    Ok(ev)
                }
            })
            .named("second-mock"),
        )
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(out.output.as_deref(), Some("Rainy, stay."));
    assert_eq!(calls.get(), 0, "a mocked tool must not run");
    assert_eq!(
        second.get(),
        1,
        "the second hook sees the mocked call, read-only"
    );
    let results = tool_results(&out.messages);
    assert_eq!(
        results,
        [ToolResult {
            call_id: "call_1_1".into(),
            name: "get_weather".into(),
            content: "Rain in Paris".into(),
            is_error: false,
            mocked: true,
        }]
    );
    assert_eq!(result_sent(&model, 1).content, "Rain in Paris");
}

#[tokio::test]
async fn before_tool_rewrites_the_input_the_tool_receives() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"city": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(entries(&log), ["tool:Rome"]);
    assert_eq!(result_sent(&model, 1).content, "Sunny in Rome");
    // The history keeps what the model asked for.
    let asked = out.messages.get(1).unwrap().tool_calls()[0]
        .arguments
        .clone();
    assert_eq!(
        serde_json::from_str::<Value>(&asked).unwrap(),
        json!({"city": "Paris"})
    );
}

#[tokio::test]
async fn before_tool_rewrite_is_validated_against_the_tool_schema() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"town": "Rome"});
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(calls.get(), 0);
    let sent = result_sent(&model, 1);
    assert!(sent.is_error);
    assert!(
        sent.content.text().contains("do not match its schema"),
        "{sent:?}"
    );
}

// ---------------------------------------------------------------- AfterTool / ToolFailed

#[tokio::test]
async fn after_tool_rewrites_the_result_the_model_sees() {
    let (log, calls) = (new_log(), Counter::default());
    let model = paris_then("ok");
    let agent = weather_agent(&model, &log, &calls)
        .after_tool(|mut ev, _ctx| async move {
            assert_eq!(*ev.input(), json!({"city": "Paris"}));
            ev.content = format!("{} (checked)", ev.content).into();
            Ok(ev)
        })
        .build()
        .unwrap();

    let out = Runtime::new().run(&agent, "Paris?").await.unwrap();

    assert_eq!(calls.get(), 1);
    assert_eq!(result_sent(&model, 1).content, "Sunny in Paris (checked)");
    assert_eq!(
        tool_results(&out.messages)[0].content,
        "Sunny in Paris (checked)"
    );
}

#[tokio::test]
async fn tool_error_recovers_with_a_result_the_model_sees_as_success() {
    let model = ScriptedModel::new()
        .tool_call("broken", json!({}))
        .text("ok");
    let broken = tool(
        "broken",
        "Always fails",
        |_: Empty, _ctx: ToolCtx| async move { Err::<String, _>(ToolFailure::new("connection reset")) },
    );
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(broken)
        .tool_failed(|mut ev, _ctx| async move {
            ev.recover(format!("cached value (after: {})", ev.error()));
            Ok(ev)
        })
        .build()
        .unwrap();

    Runtime::new().run(&agent, "go").await.unwrap();

    let sent = result_sent(&model, 1);
    assert!(!sent.is_error);
    assert_eq!(sent.content, "cached value (after: connection reset)");
}
