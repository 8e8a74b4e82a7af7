//! The form every agentry event gives a command under its own name: each event's JSON, pinned,
//! so that a change to an event's `Serialize` in agentry-core is a change seen here.

use super::Native;
use agentry_core::agent::{CompactPlan, CompactStrategy, OnCompactError};
use agentry_core::hooks::*;
use agentry_core::*;
use serde_json::{Value, json};
use std::sync::Arc;

/// Checks the JSON `ev` gives a command.
fn form<E: Native>(ev: E, expected: Value) {
    let mut payload = serde_json::Map::new();
    super::add_fields(&mut payload, &ev);
    assert_eq!(Value::Object(payload), expected, "{}", E::KIND.name());
}

fn model_error() -> ModelError {
    ModelError::new("m", ModelErrorKind::Server, "down")
}

/// An assistant turn with two calls, the second with arguments that are not JSON.
fn turn() -> Arc<Message> {
    Arc::new(Message::Assistant {
        content: "t".into(),
        thinking: Some(ThinkingBlock {
            text: "hmm".into(),
            signature: None,
            replay: None,
        }),
        tool_calls: vec![
            ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: r#"{"cmd":"ls"}"#.into(),
            },
            ToolCall {
                id: "c2".into(),
                name: "x".into(),
                arguments: "oops".into(),
            },
        ],
    })
}

fn history() -> History {
    vec![
        Message::system("sys"),
        Message::user("hi"),
        Message::assistant("yo"),
    ]
    .into()
}

fn pending() -> PendingApproval {
    PendingApproval {
        call_id: "c1".into(),
        tool: "bash".into(),
        input: json!({"cmd": "rm"}),
        reason: "risky".into(),
    }
}

#[test]
fn run_and_step_events() {
    let usage = Usage::default();
    let usage_form = serde_json::to_value(usage).unwrap();
    // Decisions are not part of the form.
    let mut before_step = BeforeStep::new(4);
    before_step.skip();
    let mut after_step = AfterStep::new(2, usage, 5);
    after_step.stop("enough");
    form(RunStart { input: "go".into() }, json!({"input": "go"}));
    form(
        RunEnd::new(StopReason::FinalAnswer, Some(json!("done")), usage, 3),
        json!({
            "output": "done",
            "steps": 3,
            "stop": {"kind": "final_answer"},
            "usage": usage_form,
        }),
    );
    form(
        RunEnd::new(StopReason::MaxSteps { limit: 2 }, None, usage, 2),
        json!({
            "output": null,
            "steps": 2,
            "stop": {"kind": "max_steps", "limit": 2},
            "usage": usage_form,
        }),
    );
    form(
        RunFailed::new(Arc::new(Error::Model(model_error()))),
        json!({"error": "model `m` failed (Server): down"}),
    );
    form(before_step, json!({"step": 4}));
    form(
        after_step,
        json!({"model_calls": 5, "step": 2, "usage": usage_form}),
    );
    form(
        Stop::new(StopReason::FinalAnswer, 1),
        json!({"output": null, "reason": {"kind": "final_answer"}, "step": 1}),
    );
    form(
        Stop::with_output(StopReason::FinalAnswer, 1, json!({"a": 1})),
        json!({"output": {"a": 1}, "reason": {"kind": "final_answer"}, "step": 1}),
    );
}

#[test]
fn model_events() {
    let usage = Usage::default();
    let usage_form = serde_json::to_value(usage).unwrap();
    let mut request = ModelRequest::new(history());
    request.system = Some(Arc::from("be nice"));
    request.tools = Arc::from(vec![ToolSpec {
        name: "bash".into(),
        description: "d".into(),
        parameters: json!({}),
    }]);
    request.params.temperature = Some(0.5);
    request.output_schema = Some(Arc::new(json!({"type": "object"})));
    let turn = turn();
    // The reasoning is not part of AfterModel's form.
    let response = ModelResponse {
        text: "hello".into(),
        thinking: Some(ThinkingBlock {
            text: "hmm".into(),
            signature: None,
            replay: None,
        }),
        tool_calls: turn.tool_calls().to_vec(),
        usage,
        finish_reason: FinishReason::default(),
    };
    form(
        BeforeModel::new(request),
        json!({
            "messages": [
                {"content": "sys", "role": "system"},
                {"content": "hi", "role": "user"},
                {"content": "yo", "role": "assistant"},
            ],
            "params": {"temperature": 0.5},
            "system": "be nice",
            "tools": ["bash"],
        }),
    );
    form(
        BeforeModel::new(ModelRequest::new(History::new())),
        json!({"messages": [], "params": {}, "system": null, "tools": []}),
    );
    form(
        AfterModel::from_model("m", response.clone()),
        json!({
            "finish_reason": "stop",
            "model": "m",
            "text": "hello",
            "tool_calls": [
                {"arguments": "{\"cmd\":\"ls\"}", "id": "c1", "name": "bash"},
                {"arguments": "oops", "id": "c2", "name": "x"},
            ],
            "usage": usage_form,
        }),
    );
    form(
        AfterModel::new(response),
        json!({
            "finish_reason": "stop",
            "model": "",
            "text": "hello",
            "tool_calls": [
                {"arguments": "{\"cmd\":\"ls\"}", "id": "c1", "name": "bash"},
                {"arguments": "oops", "id": "c2", "name": "x"},
            ],
            "usage": usage_form,
        }),
    );
    form(TextDelta::new("t".into()), json!({"text": "t"}));
    form(Thinking::new("th".into()), json!({"text": "th"}));
}

#[test]
fn tool_events() {
    let turn = turn();
    form(
        BeforeTool::new("c1", "bash", json!({"cmd": "ls"})),
        json!({"tool_input": {"cmd": "ls"}, "tool_name": "bash", "tool_use_id": "c1"}),
    );
    form(
        BeforeTool::for_call(ToolCallRef::in_turn(turn.clone(), 1), json!("raw")),
        json!({"tool_input": "raw", "tool_name": "x", "tool_use_id": "c2"}),
    );
    form(
        AfterTool::new(json!({"cmd": "ls"}), ToolResult::ok("c1", "bash", "out")),
        json!({
            "content": "out",
            "is_error": false,
            "mocked": false,
            "tool_input": {"cmd": "ls"},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        AfterTool::new(json!({}), ToolResult::error("c1", "bash", "bad")),
        json!({
            "content": "bad",
            "is_error": true,
            "mocked": false,
            "tool_input": {},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        ToolFailed::new("c1", "bash", json!({"a": [1]}), "boom".into()),
        json!({
            "error": "boom",
            "tool_input": {"a": [1]},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        BeforeToolBatch::new(turn.clone()),
        json!({
            "tool_calls": [
                {
                    "tool_input": {"cmd": "ls"},
                    "tool_name": "bash",
                    "tool_use_id": "c1",
                },
                {"tool_input": "oops", "tool_name": "x", "tool_use_id": "c2"},
            ],
        }),
    );
    form(
        AfterToolBatch::new(vec![
            ToolResult::ok("c1", "bash", "o"),
            ToolResult::error("c2", "x", "e"),
        ]),
        json!({
            "tool_results": [
                {
                    "is_error": false,
                    "tool_name": "bash",
                    "tool_response": "o",
                    "tool_use_id": "c1",
                },
                {
                    "is_error": true,
                    "tool_name": "x",
                    "tool_response": "e",
                    "tool_use_id": "c2",
                },
            ],
        }),
    );
}

#[test]
fn sub_agent_and_human_events() {
    let pending = pending();
    form(
        BeforeSubAgent::new("helper".into(), "c9".into(), "do".into()),
        json!({"agent": "helper", "input": "do", "tool_use_id": "c9"}),
    );
    form(
        AfterSubAgent::new("helper".into(), "r2".into(), "do".into(), "did".into()),
        json!({"agent": "helper", "child_run_id": "r2", "input": "do", "output": "did"}),
    );
    form(
        SubAgentFailed::new("helper".into(), "do".into(), "fail".into()),
        json!({"agent": "helper", "error": "fail", "input": "do"}),
    );
    form(
        ApprovalRequested::new(pending.clone()),
        json!({
            "reason": "risky",
            "tool_input": {"cmd": "rm"},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        ApprovalResolved::new(pending.clone(), Decision::approve("c1"), Resolver::Person),
        json!({
            "by": "person",
            "decision": {"call_id": "c1", "decision": "approve"},
            "tool_input": {"cmd": "rm"},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        ApprovalResolved::new(
            pending.clone(),
            Decision::reject_and_stop("c1", "no"),
            Resolver::Hook("h".into()),
        ),
        json!({
            "by": {"hook": "h"},
            "decision": {"call_id": "c1", "decision": "reject_and_stop", "reason": "no"},
            "tool_input": {"cmd": "rm"},
            "tool_name": "bash",
            "tool_use_id": "c1",
        }),
    );
    form(
        StoppedByHuman::new("c1".into(), "no".into(), Resolver::Person),
        json!({"by": "person", "reason": "no", "tool_use_id": "c1"}),
    );
    form(
        StoppedByHuman::new("c1".into(), "no".into(), Resolver::Hook("h".into())),
        json!({"by": {"hook": "h"}, "reason": "no", "tool_use_id": "c1"}),
    );
}

#[test]
fn context_and_state_events() {
    let history = history();
    let plan = CompactPlan {
        strategy: CompactStrategy::Summarize,
        start: 1,
        end: 3,
    };
    let turn = turn();
    form(
        BeforeCompact::new(100, 50, history.clone(), plan),
        json!({"manual": false, "messages": 3, "threshold": 50, "tokens": 100}),
    );
    form(
        AfterCompact::new(plan, 100, "sum".into()),
        json!({"manual": false, "summary": "sum", "tokens_before": 100}),
    );
    form(
        CompactFailed::new(model_error(), plan, OnCompactError::Continue),
        json!({"error": "model `m` failed (Server): down"}),
    );
    form(
        StateChange::new(
            json!({"a": 1}),
            json!({"a": 2}),
            StateSource::Tool("t".into()),
        ),
        json!({
            "current": {"a": 2},
            "previous": {"a": 1},
            "source": {"kind": "tool", "name": "t"},
        }),
    );
    form(
        StateChange::new(json!(null), json!(1), StateSource::System),
        json!({"current": 1, "previous": null, "source": {"kind": "system"}}),
    );
    form(
        MessageAdded::new(turn.clone()),
        json!({
            "message": {
                "content": "t",
                "role": "assistant",
                "thinking": {"text": "hmm"},
                "tool_calls": [
                    {"arguments": "{\"cmd\":\"ls\"}", "id": "c1", "name": "bash"},
                    {"arguments": "oops", "id": "c2", "name": "x"},
                ],
            },
        }),
    );
    form(
        MessageAdded::new(Arc::new(Message::Tool(ToolResult::ok("c1", "bash", "o")))),
        json!({
            "message": {"call_id": "c1", "content": "o", "name": "bash", "role": "tool"},
        }),
    );
    form(
        Custom::new("n".into(), json!({"d": true})),
        json!({"data": {"d": true}, "name": "n"}),
    );
}
