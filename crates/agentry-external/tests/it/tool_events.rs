//! PreToolUse, PostToolUse and PostToolUseFailure with real scripts: what they get on stdin,
//! and what each answer does to the call.

use crate::common::*;
use agentry::ToolFailure;
use agentry::prelude::*;

fn rm_then_done() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "rm -rf /tmp/build"}))
        .text("Done.")
}

#[tokio::test]
async fn exit_2_blocks_the_call_and_the_model_sees_stderr() {
    let p = Project::new();
    p.script(
        "no_rm.sh",
        "#!/bin/sh\necho 'rm is not allowed here' >&2\nexit 2\n",
    );
    let hooks = p.hooks(one(
        "PreToolUse",
        "Bash",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/no_rm.sh",
    ));
    let (model, log) = (rm_then_done(), new_log());
    let out = Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "clean up")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    assert!(
        entries(&log).is_empty(),
        "the tool never ran: {:?}",
        entries(&log)
    );
    let result = result_sent(&model, 1);
    assert!(result.is_error);
    assert!(
        result.content.text().contains("rm is not allowed here"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn the_payload_has_the_protocol_fields_and_tools_under_claude_names() {
    let p = Project::new();
    p.script(
        "capture.py",
        r#"#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
data["_cwd"] = os.getcwd()
data["_env"] = {k: os.environ.get(k) for k in ["CLAUDE_PROJECT_DIR", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID"]}
data["_transcript_exists"] = os.path.exists(data["transcript_path"])
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "payload.json"), "w") as f:
    json.dump(data, f)
"#,
    );
    let hooks = p.hooks(one(
        "PreToolUse",
        "Write",
        "python3 .claude/hooks/capture.py",
    ));
    let model = ScriptedModel::new()
        .tool_call(
            "write_file",
            json!({"path": "notes/a.txt", "content": "hi"}),
        )
        .text("ok");
    let log = new_log();
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "write")
        .await
        .unwrap();
    let got = p.json("payload.json");
    let root = std::fs::canonicalize(p.root()).unwrap();
    assert_eq!(got["hook_event_name"], "PreToolUse");
    assert_eq!(got["tool_name"], "Write");
    assert_eq!(
        got["tool_input"],
        json!({"file_path": root.join("notes/a.txt").display().to_string(), "content": "hi"})
    );
    assert!(got["tool_use_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(got["cwd"], root.display().to_string());
    assert_eq!(got["_cwd"], root.display().to_string());
    assert_eq!(
        got["_env"]["CLAUDE_PROJECT_DIR"],
        root.display().to_string()
    );
    assert_eq!(got["_env"]["CLAUDECODE"], "1");
    assert_eq!(got["_env"]["CLAUDE_CODE_SESSION_ID"], got["session_id"]);
    assert_eq!(got["permission_mode"], "default");
    assert_eq!(got["_transcript_exists"], true);
    let session = got["session_id"].as_str().unwrap();
    assert!(
        session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
        "filename-safe: {session}"
    );
    assert_eq!(entries(&log), ["write:notes/a.txt"]);
}

#[tokio::test]
async fn json_deny_blocks_with_its_reason_and_allow_with_updated_input_rewrites_the_call() {
    let p = Project::new();
    p.script(
        "guard.sh",
        r#"#!/bin/bash
cmd=$(jq -r '.tool_input.command')
if [[ "$cmd" == rm* ]]; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "destructive command"}}'
else
  jq -n --arg c "$cmd --dry-run" '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow", updatedInput: {command: $c}}}'
fi
"#,
    );
    let hooks = p.hooks(one("PreToolUse", "Bash", ".claude/hooks/guard.sh"));
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "rm -rf build"}))
        .tool_call("bash", json!({"cmd": "make"}))
        .text("ok");
    let log = new_log();
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(result_sent(&model, 1).content, "destructive command");
    assert_eq!(
        entries(&log),
        ["bash:make --dry-run"],
        "updatedInput is mapped back to `cmd`"
    );
}

#[tokio::test]
async fn parallel_hooks_merge_most_restrictive_first_and_identical_ones_run_once() {
    let p = Project::new();
    p.script(
        "count.sh",
        "#!/bin/sh\necho x >> \"$CLAUDE_PROJECT_DIR/count\"\n",
    );
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    let deny = r#"sleep 0.2; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"second opinion says no"}}'"#;
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": allow}, {"type": "command", "command": ".claude/hooks/count.sh"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": deny}, {"type": "command", "command": ".claude/hooks/count.sh"}]}
    ]}});
    let hooks = p.hooks(settings);
    let (model, log) = (rm_then_done(), new_log());
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert!(entries(&log).is_empty());
    assert_eq!(result_sent(&model, 1).content, "second opinion says no");
    assert_eq!(p.read("count"), "x\n", "the identical command ran once");
}

#[tokio::test]
async fn ask_pauses_the_call_for_approval() {
    let p = Project::new();
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check this one"}}'"#;
    let hooks = p.hooks(one("PreToolUse", "Bash", ask));
    let (model, log) = (rm_then_done(), new_log());
    let out = Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    match &out.stop {
        StopReason::AwaitingApproval { pending } => {
            assert_eq!(pending.len(), 1);
            assert_eq!(pending[0].reason, "check this one");
        }
        other => panic!("expected a pause, got {other:?}"),
    }
    assert!(entries(&log).is_empty());
}

#[tokio::test]
async fn matchers_select_by_claude_tool_name() {
    let p = Project::new();
    let deny = "echo nope >&2; exit 2";
    // Unanchored regex: `Wri.*` matches Write; `Bash` is exact and does not match `write_file`.
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "Wri.*", "hooks": [{"type": "command", "command": deny}]},
        {"matcher": "bash", "hooks": [{"type": "command", "command": deny}]}
    ]}});
    let hooks = p.hooks(settings);
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .tool_call("write_file", json!({"path": "a", "content": ""}))
        .text("ok");
    let log = new_log();
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(
        entries(&log),
        ["bash:ls"],
        "Bash ran (matchers are case-sensitive), Write was blocked"
    );
}

#[tokio::test]
async fn pre_tool_use_context_and_post_tool_use_block_reach_the_model_beside_the_result() {
    let p = Project::new();
    let pre = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"the build dir is shared"}}'"#;
    let post = r#"echo '{"decision":"block","reason":"output looks truncated"}'"#;
    let settings = json!({"hooks": {
        "PreToolUse": [{"hooks": [{"type": "command", "command": pre}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": post}]}]
    }});
    let (model, log) = (rm_then_done(), new_log());
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    let content = result_sent(&model, 1).content.text().into_owned();
    assert!(
        content.starts_with("ran rm -rf /tmp/build"),
        "the output is still there: {content}"
    );
    assert!(content.contains("the build dir is shared"), "{content}");
    assert!(content.contains("output looks truncated"), "{content}");
}

#[tokio::test]
async fn post_tool_use_sees_the_response_and_can_replace_it() {
    let p = Project::new();
    p.script(
        "redact.py",
        r#"#!/usr/bin/env python3
import json, sys
d = json.load(sys.stdin)
assert d["hook_event_name"] == "PostToolUse" and d["tool_name"] == "Bash", d
out = d["tool_response"].replace("/tmp/build", "[path]")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": out}}))
"#,
    );
    let hooks = p.hooks(one(
        "PostToolUse",
        "Bash",
        "python3 .claude/hooks/redact.py",
    ));
    let (model, log) = (rm_then_done(), new_log());
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(result_sent(&model, 1).content, "ran rm -rf [path]");
}

#[tokio::test]
async fn post_tool_use_failure_adds_context_to_the_error_the_model_sees() {
    let p = Project::new();
    p.script(
        "hint.sh",
        "#!/bin/sh\nerr=$(jq -r .error)\necho \"$err\" > \"$CLAUDE_PROJECT_DIR/error.txt\"\necho 'try again with --force' >&2\nexit 2\n",
    );
    let hooks = p.hooks(one("PostToolUseFailure", "", ".claude/hooks/hint.sh"));
    let model = ScriptedModel::new()
        .tool_call("flaky", json!({}))
        .text("ok");
    let agent =
        Agent::builder("a")
            .model(model.clone())
            .tool(tool(
                "flaky",
                "fails",
                |_: Value, _ctx: ToolCtx| async move {
                    Err::<String, _>(ToolFailure::from("disk full"))
                },
            ))
            .build()
            .unwrap();
    Runtime::new().with(hooks).run(&agent, "go").await.unwrap();
    let result = result_sent(&model, 1);
    assert!(result.is_error);
    assert!(
        result.content.text().contains("disk full"),
        "{}",
        result.content
    );
    assert!(
        result.content.text().contains("try again with --force"),
        "{}",
        result.content
    );
    assert!(p.read("error.txt").contains("disk full"));
}

#[tokio::test]
async fn a_field_the_event_does_not_allow_is_reported_and_ignored_or_fails_in_strict_mode() {
    let p = Project::new();
    let echo_back = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedInput":{"command":"evil"}}}'"#;
    let (model, log, failed) = (rm_then_done(), new_log(), new_log());
    let out = Runtime::new()
        .with(p.hooks(one("PostToolUse", "", echo_back)))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    let seen = entries(&failed);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("`updatedInput` is not allowed on PostToolUse"),
        "{seen:?}"
    );
    assert!(seen[0].contains(echo_back), "names the command: {seen:?}");

    let model = rm_then_done();
    let err = Runtime::new()
        .with(p.hooks(one("PostToolUse", "", echo_back)).strict())
        .run(&agent(&model, &log), "go")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("updatedInput"), "{err}");
}

#[tokio::test]
async fn continue_false_stops_the_run_with_the_stop_reason() {
    let p = Project::new();
    let stop = r#"echo '{"continue": false, "stopReason": "budget exhausted"}'"#;
    let (model, log) = (rm_then_done(), new_log());
    let out = Runtime::new()
        .with(p.hooks(one("PostToolUse", "Bash", stop)))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    match &out.stop {
        StopReason::Hook { reason, .. } => assert_eq!(reason, "budget exhausted"),
        other => panic!("expected a hook stop, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1, "no model call after the stop");
}

#[tokio::test]
async fn an_if_rule_narrows_a_handler_to_the_calls_it_names() {
    let p = Project::new();
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "if": "Bash(rm *)", "command": "echo 'no deleting' >&2; exit 2"}
        ]}],
        "Stop": [{"hooks": [
            {"type": "command", "if": "Bash(*)", "command": "echo '{\"decision\":\"block\",\"reason\":\"never\"}'"}
        ]}]
    }});
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .tool_call("bash", json!({"cmd": "cd /tmp && rm -rf x"}))
        .text("Done.");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.", "a handler with `if` never runs on Stop");
    assert_eq!(entries(&log), ["bash:ls"]);
    assert_eq!(result_sent(&model, 2).content, "no deleting");
}

#[tokio::test]
async fn a_background_hook_decides_nothing_and_its_context_reaches_the_next_model_call() {
    let p = Project::new();
    let late = r#"sleep 0.3; echo '{"decision":"block","reason":"ignored","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint found 2 warnings"}}'"#;
    let settings = json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": late, "async": true}
    ]}]}});
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "make"}))
        .tool_call("slow", json!({}))
        .text("Done.");
    let log = new_log();
    let agent = Agent::builder("coder")
        .model(model.clone())
        .tool(tool("bash", "Run", |a: Cmd, _ctx: ToolCtx| async move {
            Ok::<_, ToolFailure>(format!("ran {}", a.cmd))
        }))
        .tool(tool(
            "slow",
            "Waits",
            |_: Value, _ctx: ToolCtx| async move {
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                Ok::<_, ToolFailure>("waited")
            },
        ))
        .build()
        .unwrap();
    let _ = log;
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent, "go")
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(
        result_sent(&model, 1).content,
        "ran make",
        "the background hook decided nothing"
    );
    let text = |n: usize| {
        requests[n]
            .messages
            .iter()
            .map(|m| m.text().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        !text(1).contains("lint found"),
        "not there before it finished"
    );
    assert!(text(2).contains("lint found 2 warnings"), "{}", text(2));
}

/// A tool that says where it comes from and that it is destructive (as an MCP tool does).
struct Declared {
    spec: agentry::ToolSpec,
    info: std::sync::Arc<agentry::ToolInfo>,
}

impl agentry::Tool for Declared {
    fn spec(&self) -> &agentry::ToolSpec {
        &self.spec
    }
    fn call<'a>(
        &'a self,
        _input: serde_json::Value,
        _ctx: ToolCtx,
    ) -> futures::future::BoxFuture<'a, Result<agentry::ToolOutput, agentry::ToolFailure>> {
        Box::pin(async { Ok(agentry::ToolOutput::text("dropped")) })
    }
    fn info(&self) -> Option<&std::sync::Arc<agentry::ToolInfo>> {
        Some(&self.info)
    }
}

#[tokio::test]
async fn scripts_read_what_a_tool_declares_about_itself_under_agentry() {
    let p = Project::new();
    // Blocks destructive tools, reading the annotations agentry adds to the payload.
    let guard = r#"input=$(cat); if [ "$(printf '%s' "$input" | jq -r '.agentry.tool.annotations.destructiveHint')" = true ]; then printf '%s' "$input" | jq -r '"destructive tool of " + .agentry.tool.source' >&2; exit 2; fi"#;
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [
        {"type": "command", "command": guard}
    ]}]}});
    let declared = Declared {
        spec: agentry::ToolSpec {
            name: "mcp__db__drop_table".into(),
            description: "Drops a table.".into(),
            parameters: json!({"type": "object"}),
        },
        info: std::sync::Arc::new(agentry::ToolInfo {
            source: Some("db".into()),
            annotations: Some(agentry::ToolAnnotations {
                destructive_hint: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    let model = ScriptedModel::new()
        .tool_call("mcp__db__drop_table", json!({}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(declared)
        .build()
        .unwrap();
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent, "go")
        .await
        .unwrap();
    let sent = result_sent(&model, 1);
    assert!(sent.is_error, "{sent:?}");
    assert!(
        sent.content.text().contains("destructive tool of db"),
        "{sent:?}"
    );
}
