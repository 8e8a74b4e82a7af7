//! `agentry hooks test`: the configured hooks (built-ins and real command-hook scripts) run on a
//! sample event through the real binary; each hook's decision and time are printed.

use crate::common::Project;
use predicates::prelude::*;
use serde_json::{Value, json};

/// A project whose PreToolUse script blocks `rm -rf` (exit 2) and rewrites `ls` (updatedInput),
/// whose Stop script vetoes a stop once, with a tool policy that denies Write.
fn project() -> Project {
    let config = r#"
[agents.dev]
model = "scripted:turns.json"
tools = ["Bash", "Read"]

[hooks]
settings_files = [".claude/settings.json"]

[hooks.tool_policy]
deny = ["Write"]
"#;
    let p = Project::new(config, json!([]));
    std::fs::create_dir_all(p.file(".claude")).unwrap();
    std::fs::write(
        p.file(".claude/guard.sh"),
        r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'rm -rf'*) echo "rm -rf is not allowed" >&2; exit 2 ;;
  *'"command":"ls'*) printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls --color=never"}}}' ;;
esac
exit 0
"#,
    )
    .unwrap();
    std::fs::write(
        p.file(".claude/stop.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\": \"block\", \"reason\": \"run the tests first\"}'\n",
    )
    .unwrap();
    std::fs::write(
        p.file(".claude/settings.json"),
        json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/guard.sh\""}]}],
            "Stop": [{"hooks": [
                {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/stop.sh\""}]}]
        }})
        .to_string(),
    )
    .unwrap();
    p
}

fn test_json(p: &Project, event: &str, sample: Value) -> (Value, i32) {
    std::fs::write(p.file("sample.json"), sample.to_string()).unwrap();
    let (lines, code) = p.json(&["hooks", "test", event, "--input", "sample.json"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    (lines.into_iter().next().unwrap(), code)
}

#[test]
fn a_script_that_exits_2_blocks_and_is_named_with_its_time() {
    let p = project();
    let (report, code) = test_json(
        &p,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}),
    );
    assert_eq!(code, 0, "{report}");
    let hooks = report["hooks"].as_array().unwrap();
    let names: Vec<&str> = hooks.iter().map(|h| h["hook"].as_str().unwrap()).collect();
    assert_eq!(names, ["tool-policy", "command hooks"], "{report}");
    assert_eq!(hooks[0]["changed"], json!({}));
    assert_eq!(hooks[1]["decided"], true);
    assert_eq!(
        hooks[1]["changed"]["decision"],
        json!({"block": "rm -rf is not allowed"})
    );
    // A real process ran: it took measurable time.
    assert!(hooks[1]["took_ms"].as_f64().unwrap() > 0.1, "{report}");
    assert_eq!(report["decided_by"], "command hooks");
}

#[test]
fn a_rewrite_and_an_allow_are_shown_as_what_changed() {
    let p = project();
    let (report, _) = test_json(
        &p,
        "BeforeTool",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls src"}}),
    );
    // The script allows with `updatedInput`: the rewrite and the allow, no decision.
    assert_eq!(
        report["hooks"][1]["changed"],
        json!({"input": {"command": "ls --color=never"}, "allowed": "a PreToolUse hook allowed Bash"})
    );
    assert_eq!(
        report["result"]["input"],
        json!({"command": "ls --color=never"})
    );
    assert_eq!(report["decided_by"], Value::Null);
}

#[test]
fn a_hook_after_a_decision_is_shown_read_only() {
    let p = project();
    let (report, _) = test_json(
        &p,
        "PreToolUse",
        json!({"tool_name": "Write", "tool_input": {"file_path": "a", "content": "b"}}),
    );
    assert_eq!(report["decided_by"], "tool-policy");
    assert_eq!(report["hooks"][1]["read_only"], true);
    assert!(
        report["result"]["decision"]["block"]
            .as_str()
            .unwrap()
            .contains("denies `Write`")
    );
}

#[test]
fn a_stop_hook_vetoes_a_final_answer() {
    let p = project();
    let (report, _) = test_json(&p, "Stop", json!({"last_assistant_message": "All done."}));
    assert_eq!(report["result"]["veto"], "run the tests first", "{report}");
}

#[test]
fn the_text_report_names_each_hook_and_the_decision_that_stands() {
    let p = project();
    p.agentry()
        .args(["hooks", "test", "PreToolUse", "--input", "-"])
        .write_stdin(r#"{"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}"#)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("PreToolUse: 2 hook(s) ran"))
        .stdout(predicate::str::is_match(r"tool-policy +\d+\.\d\d ms +no change").unwrap())
        .stdout(
            predicate::str::is_match(
                r"command hooks +\d+\.\d\d ms +decision → block: rm -rf is not allowed  \(this decision stands\)",
            )
            .unwrap(),
        )
        .stdout(predicate::str::contains("result: decided by command hooks"));
}

#[test]
fn a_hook_that_fails_the_dispatch_is_named_and_exits_1() {
    let p = project();
    let config = std::fs::read_to_string(p.file("agentry.toml")).unwrap();
    // Fail closed: a script that crashes fails the event instead of being let through.
    std::fs::write(
        p.file("agentry.toml"),
        config.replace("[hooks]\n", "[hooks]\nfail_closed = true\n"),
    )
    .unwrap();
    std::fs::write(p.file(".claude/guard.sh"), "#!/bin/sh\nexit 7\n").unwrap();
    let (report, code) = test_json(
        &p,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    assert_eq!(code, 1, "{report}");
    assert!(
        report["error"].as_str().unwrap().contains("command hooks"),
        "{report}"
    );
    assert!(report["hooks"][1]["failure"].is_string(), "{report}");
}

#[test]
fn bad_events_and_samples_are_usage_errors_that_say_what_is_taken() {
    let p = project();
    p.agentry()
        .args(["hooks", "test", "PreTool"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("PreToolUse (BeforeTool)"));
    std::fs::write(p.file("bad.json"), "[1, 2]").unwrap();
    p.agentry()
        .args(["hooks", "test", "PreToolUse", "--input", "bad.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must be a JSON object"));
    std::fs::write(p.file("bad.json"), "{}").unwrap();
    p.agentry()
        .args(["hooks", "test", "PreToolUse", "--input", "bad.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("needs a `tool_name`"));
}

#[test]
fn an_allow_a_failing_handler_and_a_system_message_are_all_shown() {
    let config = r#"
[agents.dev]
model = "scripted:turns.json"
tools = ["Bash"]

[[hooks.events.PreToolUse]]
matcher = "Bash"
hooks = [
  { type = "command", command = "echo '{\"systemMessage\": \"checked by the guard\", \"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"permissionDecisionReason\": \"ls is read-only\"}}'" },
  { type = "command", command = "./no-such-hook.sh" },
]
"#;
    let p = Project::new(config, json!([]));
    let sample = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
    let (report, code) = test_json(&p, "PreToolUse", sample.clone());
    assert_eq!(code, 0, "a failing handler fails open: {report}");
    assert_eq!(report["result"]["allowed"], "ls is read-only", "{report}");
    let failures = report["handler_failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{report}");
    let failure = failures[0].as_str().unwrap();
    assert!(
        failure.contains("./no-such-hook.sh") && failure.contains("status 127"),
        "{failure}"
    );
    assert!(
        report["messages"][0]
            .as_str()
            .unwrap()
            .ends_with("checked by the guard"),
        "{report}"
    );
    // The text report says the same to a person.
    std::fs::write(p.file("sample.json"), sample.to_string()).unwrap();
    p.agentry()
        .args(["hooks", "test", "PreToolUse", "--input", "sample.json"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("allowed → ls is read-only"))
        .stdout(predicate::str::contains(
            "warning: command hook `./no-such-hook.sh`",
        ))
        .stdout(predicate::str::contains("message: "));
}

#[test]
fn every_claude_code_event_agentry_maps_can_be_tried() {
    let config = r#"
[agents.dev]
model = "scripted:turns.json"

[hooks]
settings_files = [".claude/settings.json"]
"#;
    let p = Project::new(config, json!([]));
    std::fs::create_dir_all(p.file(".claude")).unwrap();
    std::fs::write(
        p.file(".claude/answer.py"),
        r#"import json, os, sys
d = json.load(sys.stdin)
event = d["hook_event_name"]
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "seen.txt"), "a") as f:
    f.write(event + "\n")
if event == "PreCompact":
    print(json.dumps({"decision": "block", "reason": "not now"}))
elif event in ("SessionStart", "SubagentStart"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "ctx for " + event}}))
"#,
    )
    .unwrap();
    let handler = json!([{"hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/answer.py\""}]}]);
    let events = [
        "SessionStart",
        "SubagentStart",
        "PostToolBatch",
        "PreCompact",
        "PostCompact",
        "Notification",
    ];
    let hooks: serde_json::Map<String, Value> = events
        .iter()
        .map(|e| (e.to_string(), handler.clone()))
        .collect();
    std::fs::write(
        p.file(".claude/settings.json"),
        json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
    let samples = [
        ("SessionStart", json!({"prompt": "hi"})),
        (
            "SubagentStart",
            json!({"agent_type": "helper", "prompt": "look"}),
        ),
        (
            "PostToolBatch",
            json!({"tool_calls": [{"tool_name": "Bash", "tool_use_id": "t1", "tool_response": "ok"}]}),
        ),
        ("PreCompact", json!({})),
        (
            "PostCompact",
            json!({"compact_summary": "the story so far"}),
        ),
        (
            "Notification",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ),
    ];
    for (event, sample) in samples {
        let (report, code) = test_json(&p, event, sample);
        assert_eq!(code, 0, "{event}: {report}");
        match event {
            "SessionStart" => assert!(
                report["result"]["input"]
                    .as_str()
                    .unwrap()
                    .contains("ctx for SessionStart"),
                "{report}"
            ),
            "SubagentStart" => assert!(
                report["result"]["input"]
                    .as_str()
                    .unwrap()
                    .contains("ctx for SubagentStart"),
                "{report}"
            ),
            "PreCompact" => assert_eq!(report["result"]["veto"], "not now", "{report}"),
            _ => {}
        }
    }
    let seen = std::fs::read_to_string(p.file("seen.txt")).unwrap();
    for event in events {
        assert!(seen.lines().any(|l| l == event), "{event} fired: {seen}");
    }
}

/// A project whose hooks write what they received to `got.txt`: a Stop guard that blocks
/// unless `stop_hook_active`, SessionStart hooks for `compact` only, SessionEnd for `clear`.
fn sampled() -> Project {
    let config = r#"
[agents.dev]
model = "scripted:turns.json"

[[hooks.events.Stop]]
hooks = [{ type = "command", command = "jq -e '.stop_hook_active' >/dev/null && exit 0; echo 'not yet' >&2; exit 2" }]

[[hooks.events.SessionStart]]
matcher = "compact"
hooks = [{ type = "command", command = "jq -r '\"start \" + .source + \" \" + .transcript_path' >> got.txt" }]

[[hooks.events.SessionEnd]]
matcher = "clear"
hooks = [{ type = "command", command = "jq -r '\"end \" + .reason + \" \" + .transcript_path + \" \" + .session_id' >> got.txt" }]
"#;
    Project::new(config, json!([]))
}

#[test]
fn the_samples_own_fields_reach_the_scripts() {
    let p = sampled();
    // stop_hook_active: a guard that lets the second stop through.
    let out = p
        .agentry()
        .args(["--json", "hooks", "test", "Stop", "--input", "-"])
        .write_stdin(r#"{"stop_hook_active": false}"#)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.to_string().contains("not yet"), "{report}");
    let out = p
        .agentry()
        .args(["--json", "hooks", "test", "Stop", "--input", "-"])
        .write_stdin(r#"{"stop_hook_active": true}"#)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!report.to_string().contains("not yet"), "{report}");
    // source: the matcher is tested against the sample's, and the script reads it.
    p.agentry()
        .args(["hooks", "test", "SessionStart", "--input", "-"])
        .write_stdin(r#"{"source": "startup"}"#)
        .assert()
        .code(0);
    assert!(!p.file("got.txt").exists(), "a `compact` hook on a startup");
    p.agentry()
        .args(["hooks", "test", "SessionStart", "--input", "-"])
        .write_stdin(r#"{"source": "compact", "transcript_path": "/tmp/t.jsonl"}"#)
        .assert()
        .code(0);
    // SessionEnd, with its reason, transcript and session.
    p.agentry()
        .args(["hooks", "test", "SessionEnd", "--input", "-"])
        .write_stdin(
            r#"{"reason": "clear", "transcript_path": "/tmp/t.jsonl", "session_id": "s-9"}"#,
        )
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "SessionEnd (clear): 1 set(s) of command hooks ran",
        ));
    let got = std::fs::read_to_string(p.file("got.txt")).unwrap();
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        ["start compact /tmp/t.jsonl", "end clear /tmp/t.jsonl s-9"],
        "{got}"
    );
}
