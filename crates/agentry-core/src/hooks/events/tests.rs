//! The events' JSON form: the keys each one gives, and what it leaves out.

use super::*;
use crate::{Decision, Message, ModelResponse, PendingApproval, ToolCall, ToolResult};
use serde_json::{Value, json};
use std::sync::Arc;

/// The keys of an event's JSON, sorted.
fn keys(event: &impl serde::Serialize) -> Vec<String> {
    match serde_json::to_value(event).expect("events serialize") {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("an event serializes to an object, not {other}"),
    }
}

#[test]
fn a_tool_call_is_named_as_hook_scripts_know_it_and_its_decision_is_left_out() {
    let mut ev = BeforeTool::new("call_1", "bash", json!({"cmd": "ls"}));
    ev.block("no");
    assert_eq!(keys(&ev), ["tool_input", "tool_name", "tool_use_id"]);
    assert_eq!(
        serde_json::to_value(&ev).unwrap(),
        json!({"tool_name": "bash", "tool_input": {"cmd": "ls"}, "tool_use_id": "call_1"})
    );
    let failed = ToolFailed::new("call_1", "bash", json!({}), "exit 1".into());
    assert_eq!(
        keys(&failed),
        ["error", "tool_input", "tool_name", "tool_use_id"]
    );
    let after = AfterTool::new(json!({}), ToolResult::ok("call_1", "bash", "ok"));
    assert_eq!(
        keys(&after),
        [
            "content",
            "is_error",
            "mocked",
            "tool_input",
            "tool_name",
            "tool_use_id"
        ]
    );
}

#[test]
fn a_model_response_gives_its_parts_and_the_model_without_the_reasoning() {
    let mut ev = AfterModel::from_model("scripted", ModelResponse::default());
    ev.retry("again");
    assert_eq!(
        keys(&ev),
        ["finish_reason", "model", "text", "tool_calls", "usage"]
    );
}

#[test]
fn computed_fields_say_what_they_stand_for() {
    let turn = Arc::new(Message::Assistant {
        content: crate::Content::new(),
        thinking: None,
        tool_calls: vec![
            ToolCall {
                id: "a".into(),
                name: "bash".into(),
                arguments: r#"{"cmd":"ls"}"#.into(),
            },
            ToolCall {
                id: "b".into(),
                name: "lookup".into(),
                arguments: "not json".into(),
            },
        ],
    });
    assert_eq!(
        serde_json::to_value(BeforeToolBatch::new(turn)).unwrap(),
        json!({"tool_calls": [
            {"tool_name": "bash", "tool_input": {"cmd": "ls"}, "tool_use_id": "a"},
            {"tool_name": "lookup", "tool_input": "not json", "tool_use_id": "b"},
        ]})
    );
    let pending = PendingApproval {
        call_id: "a".into(),
        tool: "bash".into(),
        input: json!({}),
        reason: "risky".into(),
    };
    let requested = ApprovalRequested::new(pending.clone());
    assert_eq!(
        keys(&requested),
        ["reason", "tool_input", "tool_name", "tool_use_id"]
    );
    let resolved = ApprovalResolved::new(
        pending,
        Decision::approve("a"),
        Resolver::Hook("auto".into()),
    );
    let value = serde_json::to_value(&resolved).unwrap();
    assert_eq!(
        keys(&resolved),
        ["by", "decision", "tool_input", "tool_name", "tool_use_id"]
    );
    assert_eq!(value["by"], json!({"hook": "auto"}));
    assert_eq!(
        serde_json::to_value(Resolver::Person).unwrap(),
        json!("person")
    );
}
