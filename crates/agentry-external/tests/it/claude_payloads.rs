//! The fields of every Claude Code event a run fires, exactly: a capture script registered on
//! each event records what it gets on stdin, and each event's set of fields is pinned, with the
//! values that come from agentry's event under Claude Code's names.

use crate::common::*;
use agentry::ToolFailure;
use agentry::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// The fields every payload carries.
const COMMON: [&str; 6] = [
    "agentry",
    "cwd",
    "hook_event_name",
    "permission_mode",
    "session_id",
    "transcript_path",
];

/// An agent with `bash` (Bash), `write_file` (Write), `stat` (answers JSON) and `flaky` (fails).
fn agent(model: &ScriptedModel) -> Agent {
    Agent::builder("coder")
        .model(model.clone())
        .tool(tool("bash", "Run a command", |a: Cmd, _ctx: ToolCtx| async move {
            Ok::<_, ToolFailure>(format!("ran {}", a.cmd))
        }))
        .tool(tool(
            "write_file",
            "Write a file",
            |a: WriteFile, _ctx: ToolCtx| async move {
                Ok::<_, ToolFailure>(format!("wrote {} bytes", a.content.len()))
            },
        ))
        .tool(tool("stat", "Size of a file", |_: Value, _ctx: ToolCtx| async move {
            Ok::<_, ToolFailure>(json!({"size": 3}))
        }))
        .tool(tool("flaky", "Always fails", |_: Value, _ctx: ToolCtx| async move {
            Err::<String, _>(ToolFailure::new("disk full"))
        }))
        .build()
        .unwrap()
}

/// A handler entry running `command`.
fn handler(command: &str) -> Value {
    json!({"type": "command", "command": command})
}

#[tokio::test]
async fn every_event_gets_exactly_its_claude_code_fields() {
    let p = Project::new();
    p.script(
        "capture.py",
        r#"#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "payloads.jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
"#,
    );
    p.script(
        "ask.sh",
        "#!/bin/sh\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"a person decides\"}}'\n",
    );
    p.script(
        "allow.sh",
        "#!/bin/sh\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", \"decision\": {\"behavior\": \"allow\"}}}'\n",
    );
    let capture = "python3 .claude/hooks/capture.py";
    let mut events = serde_json::Map::new();
    for event in [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "Notification",
        "PostToolBatch",
        "UserPromptSubmit",
        "SessionStart",
        "Stop",
    ] {
        let mut hooks = vec![handler(capture)];
        match event {
            "PreToolUse" => {
                events.insert(
                    event.into(),
                    json!([
                        {"matcher": "*", "hooks": hooks},
                        {"matcher": "Write", "hooks": [handler(".claude/hooks/ask.sh")]},
                    ]),
                );
                continue;
            }
            "PermissionRequest" => hooks.push(handler(".claude/hooks/allow.sh")),
            _ => {}
        }
        events.insert(event.into(), json!([{"matcher": "*", "hooks": hooks}]));
    }
    let hooks = p.hooks(json!({ "hooks": events }));
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .tool_call("stat", json!({"path": "a"}))
        .tool_call("flaky", json!({}))
        .tool_call("write_file", json!({"path": "a.txt", "content": "hi"}))
        .text("All done.");
    Runtime::new()
        .with(hooks)
        .run(&agent(&model), "tidy up")
        .await
        .unwrap();

    let mut seen: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in p.read("payloads.jsonl").lines() {
        let payload: Value = serde_json::from_str(line).unwrap();
        let event = payload["hook_event_name"].as_str().unwrap().to_string();
        seen.entry(event).or_default().push(payload);
    }
    let fields = |own: &[&str]| -> BTreeSet<String> {
        COMMON.iter().chain(own).map(|s| s.to_string()).collect()
    };
    let expected: [(&str, &[&str]); 9] = [
        ("SessionStart", &["source", "agent_type"]),
        ("UserPromptSubmit", &["prompt"]),
        ("PreToolUse", &["tool_name", "tool_input", "tool_use_id"]),
        (
            "PostToolUse",
            &["tool_name", "tool_input", "tool_response", "tool_use_id"],
        ),
        (
            "PostToolUseFailure",
            &["tool_name", "tool_input", "tool_use_id", "error"],
        ),
        (
            "PermissionRequest",
            &["tool_name", "tool_input", "permission_suggestions"],
        ),
        ("Notification", &["message", "title", "notification_type"]),
        ("PostToolBatch", &["tool_calls"]),
        ("Stop", &["stop_hook_active", "last_assistant_message"]),
    ];
    for (event, own) in expected {
        let payloads = seen
            .get(event)
            .unwrap_or_else(|| panic!("{event} fired: {:?}", seen.keys()));
        for payload in payloads {
            let got: BTreeSet<String> = payload.as_object().unwrap().keys().cloned().collect();
            assert_eq!(got, fields(own), "{event}: {payload}");
        }
    }

    let one = |event: &str, tool: &str| -> Value {
        seen[event]
            .iter()
            .find(|p| p["tool_name"] == tool)
            .unwrap_or_else(|| panic!("{event} for {tool}: {:?}", seen[event]))
            .clone()
    };
    assert_eq!(seen["UserPromptSubmit"][0]["prompt"], "tidy up");
    assert_eq!(
        one("PreToolUse", "Bash")["tool_input"],
        json!({"command": "ls"})
    );
    // A tool's JSON result is JSON; text stays text.
    assert_eq!(
        one("PostToolUse", "stat")["tool_response"],
        json!({"size": 3})
    );
    assert_eq!(one("PostToolUse", "Bash")["tool_response"], "ran ls");
    let failed = one("PostToolUseFailure", "flaky");
    assert!(
        failed["error"].as_str().unwrap().contains("disk full"),
        "{failed}"
    );
    let asked = one("PermissionRequest", "Write");
    let root = std::fs::canonicalize(p.root()).unwrap();
    assert_eq!(
        asked["tool_input"],
        json!({"file_path": root.join("a.txt").display().to_string(), "content": "hi"})
    );
    assert_eq!(asked["permission_suggestions"], json!([]));
    // The batch's calls, each tool under its Claude Code name.
    let batches = &seen["PostToolBatch"];
    let names: Vec<&str> = batches
        .iter()
        .flat_map(|b| b["tool_calls"].as_array().unwrap())
        .map(|c| c["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Bash", "stat", "flaky", "Write"]);
    let stop = &seen["Stop"][0];
    assert_eq!(stop["last_assistant_message"], "All done.");
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(seen["SessionStart"][0]["source"], "startup");
}
