//! Tool calls through the in-process runtime: bad arguments from the model, unknown tools,
//! failing tools, and several calls of one turn (concurrent or not).

use agentry::prelude::*;
use agentry::{Message, ScriptedTurn, Tool, ToolFailure, ToolResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Barrier;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// `echo` (counts its calls) and `shout`, so unknown-tool errors have a list to show.
fn agent_with(model: &ScriptedModel, calls: &Arc<AtomicUsize>) -> Agent {
    let counter = calls.clone();
    let echo = tool("echo", "Echoes text", move |a: EchoArgs, _ctx: ToolCtx| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(format!("echo: {}", a.text))
        }
    });
    let shout = tool(
        "shout",
        "Shouts text",
        |a: EchoArgs, _ctx: ToolCtx| async move { Ok(a.text.to_uppercase()) },
    );
    Agent::builder("tools")
        .model(model.clone())
        .tool(echo)
        .tool(shout)
        .build()
        .unwrap()
}

/// Runs one bad turn followed by a text answer; returns the output, the model, and how many
/// times `echo` ran.
async fn run_turn(turn: ScriptedTurn) -> (RunOutput<(), String>, ScriptedModel, usize) {
    let model = ScriptedModel::new().turn(turn).text("recovered");
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(&model, &calls);
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    (out, model, calls.load(Ordering::SeqCst))
}

/// The tool result the second model request ends with.
fn error_result_sent_back(model: &ScriptedModel) -> ToolResult {
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the run should ask the model twice");
    let last = requests[1].messages.last().unwrap();
    let result = last
        .tool_result()
        .unwrap_or_else(|| panic!("the second request should end with a tool result: {last:?}"))
        .clone();
    assert!(result.is_error, "expected an error result: {result:?}");
    assert!(!result.mocked);
    result
}

fn assert_went_on(out: &RunOutput<(), String>) {
    assert_eq!(out.output.as_deref(), Some("recovered"));
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn malformed_json_arguments_become_an_error_result_and_the_run_goes_on() {
    let (out, model, calls) =
        run_turn(ScriptedTurn::new().with_raw_tool_call("echo", "{not json")).await;
    assert_eq!(calls, 0, "the tool must not be called with malformed JSON");
    let result = error_result_sent_back(&model);
    assert_eq!(result.call_id, "call_1_1");
    assert_eq!(result.name, "echo");
    assert!(
        result.content.text().contains("not valid JSON"),
        "{}",
        result.content
    );
    assert!(
        result.content.text().contains("`echo`"),
        "{}",
        result.content
    );
    // The assistant turn keeps the arguments exactly as the model sent them.
    assert_eq!(out.messages[1].tool_calls()[0].arguments, "{not json");
    assert_went_on(&out);
}

#[tokio::test]
async fn arguments_of_the_wrong_type_fail_the_schema() {
    let (out, model, calls) = run_turn(ScriptedTurn::tool_call("echo", json!({"text": 5}))).await;
    assert_eq!(calls, 0);
    let result = error_result_sent_back(&model);
    assert!(
        result.content.text().contains("do not match its schema"),
        "{}",
        result.content
    );
    assert!(
        result.content.text().contains("/text"),
        "{}",
        result.content
    );
    assert_went_on(&out);
}

#[tokio::test]
async fn a_missing_required_field_fails_the_schema() {
    let (out, model, calls) = run_turn(ScriptedTurn::tool_call("echo", json!({}))).await;
    assert_eq!(calls, 0);
    let result = error_result_sent_back(&model);
    assert!(
        result.content.text().contains("do not match its schema"),
        "{}",
        result.content
    );
    assert!(
        result.content.text().contains("\"text\"") && result.content.text().contains("required"),
        "{}",
        result.content
    );
    assert_went_on(&out);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_fail_the_schema() {
    let (out, model, calls) =
        run_turn(ScriptedTurn::new().with_raw_tool_call("echo", r#"["hi"]"#)).await;
    assert_eq!(calls, 0);
    let result = error_result_sent_back(&model);
    assert!(
        result.content.text().contains("do not match its schema"),
        "{}",
        result.content
    );
    assert_went_on(&out);
}

#[tokio::test]
async fn an_unknown_tool_gets_an_error_listing_the_tools() {
    let (out, model, calls) = run_turn(ScriptedTurn::tool_call("nope", json!({}))).await;
    assert_eq!(calls, 0);
    let result = error_result_sent_back(&model);
    assert_eq!(result.name, "nope");
    assert!(
        result.content.text().contains("no tool named `nope`"),
        "{}",
        result.content
    );
    assert!(result.content.text().contains("echo"), "{}", result.content);
    assert!(
        result.content.text().contains("shout"),
        "{}",
        result.content
    );
    assert_went_on(&out);
}

#[tokio::test]
async fn a_bad_call_does_not_stop_a_good_call_of_the_same_turn() {
    let turn = ScriptedTurn::new()
        .with_raw_tool_call("echo", "{\"text\": ")
        .with_tool_call("echo", json!({"text": "hi"}));
    let (out, model, calls) = run_turn(turn).await;
    assert_eq!(calls, 1, "only the well-formed call runs");
    let req = &model.requests()[1];
    let results: Vec<&ToolResult> = req
        .messages
        .iter()
        .filter_map(Message::tool_result)
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].call_id, "call_1_1");
    assert!(results[0].is_error);
    assert!(results[0].content.text().contains("not valid JSON"));
    assert_eq!(results[1].call_id, "call_1_2");
    assert!(!results[1].is_error);
    assert_eq!(results[1].content, "echo: hi");
    assert_went_on(&out);
}

#[tokio::test]
async fn before_tool_hooks_do_not_see_malformed_calls() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = seen.clone();
    let model = ScriptedModel::new()
        .turn(ScriptedTurn::new().with_raw_tool_call("echo", "nope"))
        .text("recovered");
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(&model, &calls);
    let out = Runtime::new()
        .with(on::before_tool(move |ev, _ctx| {
            seen2.fetch_add(1, Ordering::SeqCst);
            async move { Ok(ev) }
        }))
        .run(&agent, "go")
        .await
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_went_on(&out);
}

#[tokio::test]
async fn input_rewritten_by_a_hook_is_validated_too() {
    let model = ScriptedModel::new()
        .tool_call("echo", json!({"text": "fine"}))
        .text("recovered");
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent_with(&model, &calls);
    let out = Runtime::new()
        .with(on::before_tool(|mut ev, _ctx| async move {
            ev.input = json!({"text": ["not", "a", "string"]});
            Ok(ev)
        }))
        .run(&agent, "go")
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let result = error_result_sent_back(&model);
    assert!(
        result.content.text().contains("do not match its schema"),
        "{}",
        result.content
    );
    assert_went_on(&out);
}

#[tokio::test]
async fn a_failing_or_panicking_tool_becomes_an_error_result() {
    let failing = tool("fail", "Fails", |_: EchoArgs, _ctx: ToolCtx| async move {
        Err::<String, _>(ToolFailure::new("disk full; try later"))
    });
    let panicking = tool("boom", "Panics", |_: EchoArgs, _ctx: ToolCtx| async move {
        if true {
            panic!("kaboom");
        }
        Ok("unreachable")
    });
    let model = ScriptedModel::new()
        .tool_calls([
            ("fail", json!({"text": "a"})),
            ("boom", json!({"text": "b"})),
        ])
        .text("recovered");
    let agent = Agent::builder("tools")
        .model(model.clone())
        .tool(failing)
        .tool(panicking)
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    let results: Vec<ToolResult> = out
        .messages
        .iter()
        .filter_map(Message::tool_result)
        .cloned()
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_error);
    assert_eq!(results[0].content, "disk full; try later");
    assert!(results[1].is_error);
    assert!(
        results[1].content.text().contains("panicked"),
        "{}",
        results[1].content
    );
    assert!(
        results[1].content.text().contains("kaboom"),
        "{}",
        results[1].content
    );
    assert_went_on(&out);
}

#[derive(Deserialize, JsonSchema)]
struct Who {
    id: String,
}

type Log = Arc<Mutex<Vec<String>>>;

/// A tool whose calls meet at a barrier of two (giving up after `patience`). Call `a` takes a
/// little longer after the meeting, so it finishes after `b`.
fn meeting_tool(barrier: Arc<Barrier>, log: Log, patience: Duration) -> impl Tool {
    tool(
        "meet",
        "Waits for the other call",
        move |a: Who, _ctx: ToolCtx| {
            let (barrier, log) = (barrier.clone(), log.clone());
            async move {
                log.lock().unwrap().push(format!("start {}", a.id));
                let met = tokio::time::timeout(patience, barrier.wait()).await;
                if a.id == "a" {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
                log.lock().unwrap().push(format!("end {}", a.id));
                match met {
                    Ok(_) => Ok(format!("met {}", a.id)),
                    Err(_) => Err(ToolFailure::new(format!("{} waited alone", a.id))),
                }
            }
        },
    )
}

fn meeting_agent(parallel: bool, log: &Log, patience: Duration) -> Agent {
    let model = ScriptedModel::new()
        .tool_calls([("meet", json!({"id": "a"})), ("meet", json!({"id": "b"}))])
        .text("done");
    Agent::builder("meeting")
        .model(model)
        .tool(meeting_tool(
            Arc::new(Barrier::new(2)),
            log.clone(),
            patience,
        ))
        .parallel_tool_calls(parallel)
        .build()
        .unwrap()
}

fn tool_results(out: &RunOutput<(), String>) -> Vec<ToolResult> {
    out.messages
        .iter()
        .filter_map(Message::tool_result)
        .cloned()
        .collect()
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_and_keep_call_order() {
    let log: Log = Arc::default();
    let agent = meeting_agent(true, &log, Duration::from_secs(5));
    let out = tokio::time::timeout(Duration::from_secs(20), Runtime::new().run(&agent, "go"))
        .await
        .expect("the run hung")
        .unwrap();
    let results = tool_results(&out);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(!r.is_error, "both calls should meet at the barrier: {r:?}");
    }
    // Results are in call order although `b` finished first.
    assert_eq!(
        (
            results[0].call_id.as_str(),
            results[0].content.as_text().unwrap_or_default()
        ),
        ("call_1_1", "met a")
    );
    assert_eq!(
        (
            results[1].call_id.as_str(),
            results[1].content.as_text().unwrap_or_default()
        ),
        ("call_1_2", "met b")
    );
    let log = log.lock().unwrap().clone();
    assert_eq!(log[..2], ["start a", "start b"]);
    assert_eq!(log[2..], ["end b", "end a"], "b finishes first");
    // The results directly follow the assistant turn that asked for them, in order.
    assert_eq!(out.messages.len(), 5);
    assert_eq!(out.messages[2].tool_result().unwrap().call_id, "call_1_1");
    assert_eq!(out.messages[3].tool_result().unwrap().call_id, "call_1_2");
    assert_eq!(out.output.as_deref(), Some("done"));
}

#[tokio::test]
async fn parallel_tool_calls_off_runs_calls_one_after_another() {
    let log: Log = Arc::default();
    let agent = meeting_agent(false, &log, Duration::from_millis(200));
    let out = tokio::time::timeout(Duration::from_secs(20), Runtime::new().run(&agent, "go"))
        .await
        .expect("the run hung")
        .unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(log, ["start a", "end a", "start b", "end b"]);
    let results = tool_results(&out);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].call_id, "call_1_1");
    assert!(results[0].is_error, "a cannot meet b: {:?}", results[0]);
    assert_eq!(results[0].content, "a waited alone");
    assert_eq!(results[1].call_id, "call_1_2");
    assert_eq!(out.output.as_deref(), Some("done"));
}
