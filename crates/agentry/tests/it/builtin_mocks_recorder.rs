//! Tool mocks and the recorder in real runs: a mocked tool never runs, its result is flagged
//! `mocked` in events and history, a closure mock sees the input, the tool policy still blocks
//! before a mock, and the recorder's assertions pass and fail as they should.

use agentry::Tool;
use agentry::builtins::{Recorder, ToolMocks, ToolPolicy};
use agentry::hooks::EventKind;
use agentry::prelude::*;
use std::sync::{Arc, Mutex};

#[derive(Deserialize, JsonSchema)]
struct Query {
    query: String,
}

fn search(ran: &Arc<Mutex<u32>>) -> impl Tool + use<> {
    let ran = ran.clone();
    tool("search", "Searches.", move |q: Query, _ctx: ToolCtx| {
        let ran = ran.clone();
        async move {
            *ran.lock().unwrap() += 1;
            Ok(format!("real results for {}", q.query))
        }
    })
}

/// The agent under test, before its hooks are added.
fn researcher(model: &ScriptedModel, ran: &Arc<Mutex<u32>>) -> agentry::AgentBuilder<(), String> {
    Agent::builder("researcher")
        .model(model.clone())
        .tool(search(ran))
}

#[tokio::test]
async fn a_mocked_tool_never_runs_and_its_result_is_flagged_mocked() {
    let ran = Arc::new(Mutex::new(0));
    let model = ScriptedModel::new()
        .tool_call("search", json!({"query": "rust"}))
        .tool_call("search", json!({"query": "tokio"}))
        .text("done");
    let recorder = Recorder::new();
    let mocks = ToolMocks::new().respond("search", |input| {
        format!("mocked: {}", input["query"].as_str().unwrap())
    });
    let agent = researcher(&model, &ran)
        .with(mocks)
        .with(recorder.clone())
        .build()
        .unwrap();
    let mut run = Runtime::new().run(&agent, "go").start();
    let mut finished = Vec::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::ToolFinished { result, .. } = ev {
            finished.push(result);
        }
    }
    let out = run.result().await.unwrap();
    assert_eq!(*ran.lock().unwrap(), 0, "the real tool never ran");
    assert_eq!(finished.len(), 2);
    assert!(finished.iter().all(|r| r.mocked && !r.is_error));
    assert_eq!(finished[1].content, "mocked: tokio");
    let in_history: Vec<_> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result())
        .collect();
    assert_eq!(in_history.len(), 2);
    assert!(in_history.iter().all(|r| r.mocked));
    assert_eq!(in_history[0].content, "mocked: rust");

    recorder.assert_tool_called("search", &json!({"query": "tokio"}));
    let after: Vec<_> = recorder
        .of(EventKind::AfterTool)
        .into_iter()
        .map(|r| r.detail["mocked"].clone())
        .collect();
    assert_eq!(after, [json!(true), json!(true)]);
}

#[tokio::test]
async fn a_fixed_mock_and_an_unmocked_tool_side_by_side() {
    let ran = Arc::new(Mutex::new(0));
    let model = ScriptedModel::new()
        .tool_call("search", json!({"query": "x"}))
        .text("done");
    let mocks = ToolMocks::new().result("other_tool", json!({"n": 1}));
    let agent = researcher(&model, &ran).with(mocks).build().unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(*ran.lock().unwrap(), 1, "an unmocked tool runs for real");
    let result = out.messages.iter().find_map(|m| m.tool_result()).unwrap();
    assert!(!result.mocked);
    assert_eq!(result.content, "real results for x");
}

#[tokio::test]
async fn the_tool_policy_blocks_before_a_mock_answers() {
    let ran = Arc::new(Mutex::new(0));
    let model = ScriptedModel::new()
        .tool_call("search", json!({"query": "x"}))
        .text("done");
    let policy = ToolPolicy::allow_by_default()
        .deny("search")
        .build()
        .unwrap();
    let mocks = ToolMocks::new().result("search", "mocked");
    let agent = researcher(&model, &ran)
        .with(mocks)
        .with(policy)
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    let result = out.messages.iter().find_map(|m| m.tool_result()).unwrap();
    assert!(result.is_error && !result.mocked, "{result:?}");
    assert!(result.content.text().contains("denies `search`"));
}

#[tokio::test]
async fn the_recorder_sees_the_whole_run_in_order_including_sub_agents() {
    let child = Agent::builder("child")
        .description("Answers.")
        .model(ScriptedModel::new().text("42"))
        .build()
        .unwrap();
    let parent = Agent::builder("parent")
        .model(
            ScriptedModel::new()
                .tool_call("child", json!({"input": "?"}))
                .text("It is 42."),
        )
        .sub_agent(&child)
        .build()
        .unwrap();
    let recorder = Recorder::new();
    Runtime::new()
        .with(recorder.clone())
        .run(&parent, "go")
        .await
        .unwrap();
    recorder.assert_sequence(&[
        EventKind::RunStart,
        EventKind::BeforeStep,
        EventKind::BeforeModel,
        EventKind::AfterModel,
        EventKind::BeforeTool,
        EventKind::BeforeSubAgent,
        EventKind::RunStart,
        EventKind::RunEnd,
        EventKind::AfterSubAgent,
        EventKind::AfterTool,
        EventKind::AfterStep,
        EventKind::Stop,
        EventKind::RunEnd,
    ]);
    let child_events: Vec<_> = recorder
        .events()
        .into_iter()
        .filter(|r| r.agent_path == "parent/child")
        .collect();
    assert_eq!(child_events.first().unwrap().kind, EventKind::RunStart);
    assert!(
        child_events
            .iter()
            .any(|r| r.kind == EventKind::TextDelta && r.detail["text"] == "42")
    );
    let ends = recorder.of(EventKind::RunEnd);
    assert_eq!(ends.last().unwrap().detail["stop"], "final answer");
    assert_eq!(
        recorder
            .kinds()
            .iter()
            .filter(|k| **k == EventKind::RunStart)
            .count(),
        2
    );
    recorder.assert_tool_not_called("search");
    recorder.clear();
    assert!(recorder.events().is_empty());
}

#[test]
fn recorder_assertions_fail_with_what_was_seen() {
    let recorder = Recorder::new();
    let missing = std::panic::catch_unwind(|| recorder.assert_sequence(&[EventKind::RunStart]));
    let text = *missing.unwrap_err().downcast::<String>().unwrap();
    assert!(text.contains("expected RunStart"), "{text}");
    let missing = std::panic::catch_unwind(|| recorder.assert_tool_called("x", &json!({})));
    let text = *missing.unwrap_err().downcast::<String>().unwrap();
    assert!(text.contains("expected a call of `x`"), "{text}");
}
