//! UserPromptSubmit, SessionStart, Stop, SubagentStop, PermissionRequest and Notification, and
//! the transcript scripts read.

use crate::common::*;
use agentry::prelude::*;
use agentry::{Message, RunOptions, ScriptedTurn, agent::Compaction};

#[tokio::test]
async fn user_prompt_submit_plain_stdout_and_additional_context_reach_the_model() {
    let p = Project::new();
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "echo 'The sprint ends Friday.'"},
        {"type": "command", "command": r#"echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"Use metric units."}}'"#}
    ]}]}});
    let model = ScriptedModel::new().text("ok");
    let log = new_log();
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "plan the week")
        .await
        .unwrap();
    let prompt = model.requests()[0]
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::User { .. }))
        .unwrap()
        .text()
        .to_string();
    assert!(prompt.starts_with("plan the week"), "{prompt}");
    assert!(prompt.contains("The sprint ends Friday."), "{prompt}");
    assert!(prompt.contains("Use metric units."), "{prompt}");
}

#[tokio::test]
async fn user_prompt_submit_block_stops_before_the_model_is_called() {
    let p = Project::new();
    p.script(
        "secrets.py",
        r#"#!/usr/bin/env python3
import json, sys
d = json.load(sys.stdin)
if "password" in d["prompt"]:
    print(json.dumps({"decision": "block", "reason": "prompts must not carry secrets"}))
"#,
    );
    let model = ScriptedModel::new().text("ok");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(one(
            "UserPromptSubmit",
            "",
            "python3 .claude/hooks/secrets.py",
        )))
        .run(&agent(&model, &log), "my password is hunter2")
        .await
        .unwrap();
    match &out.stop {
        StopReason::Hook { reason, .. } => assert_eq!(reason, "prompts must not carry secrets"),
        other => panic!("expected a hook stop, got {other:?}"),
    }
    assert!(model.requests().is_empty(), "the model was never called");
    assert!(
        !out.messages
            .iter()
            .any(|m| matches!(m.role(), agentry::Role::User)),
        "the erased prompt leaves no (empty) user message: {:?}",
        out.messages
    );
}

#[tokio::test]
async fn stop_block_continues_the_run_once_and_the_transcript_is_complete_before_it() {
    let p = Project::new();
    // Like real Stop hooks: reads the transcript with grep for the literal compact
    // `"role":"assistant"`, and blocks once (stop_hook_active guards the loop).
    p.script(
        "verify.sh",
        r#"#!/bin/bash
input=$(cat)
active=$(echo "$input" | jq -r .stop_hook_active)
transcript=$(echo "$input" | jq -r .transcript_path)
last=$(grep '"role":"assistant"' "$transcript" | tail -n 1 | jq -r '.message.content[] | select(.type=="text") | .text')
echo "$active|$last|$(echo "$input" | jq -r .last_assistant_message)" >> "$CLAUDE_PROJECT_DIR/stops.txt"
if [[ "$active" == "false" ]]; then
  echo '{"decision": "block", "reason": "run the tests before you finish"}'
fi
"#,
    );
    let model = ScriptedModel::new()
        .text("All done.")
        .text("Tests pass. Done.");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(one("Stop", "", ".claude/hooks/verify.sh")))
        .run(&agent(&model, &log), "fix it")
        .await
        .unwrap();
    assert_eq!(out.text, "Tests pass. Done.");
    assert_eq!(
        p.read("stops.txt"),
        "false|All done.|All done.\ntrue|Tests pass. Done.|Tests pass. Done.\n"
    );
    let second = &model.requests()[1].messages;
    assert!(
        second
            .iter()
            .any(|m| m.text().contains("run the tests before you finish")),
        "the model got the reason"
    );
}

#[tokio::test]
async fn the_transcript_is_jsonl_in_claude_codes_line_format() {
    let p = Project::new();
    p.script(
        "copy.sh",
        "#!/bin/sh\ncp \"$(jq -r .transcript_path)\" \"$CLAUDE_PROJECT_DIR/transcript.jsonl\"\n",
    );
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Listed.");
    let log = new_log();
    Runtime::new()
        .with(p.hooks(one("Stop", "", ".claude/hooks/copy.sh")))
        .run(&agent(&model, &log), "list")
        .await
        .unwrap();
    let text = p.read("transcript.jsonl");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "user", "assistant"], "{text}");
    assert_eq!(lines[1]["message"]["content"][0]["type"], "tool_use");
    assert_eq!(lines[1]["message"]["content"][0]["name"], "Bash");
    assert_eq!(lines[1]["message"]["content"][0]["input"]["cmd"], "ls");
    assert_eq!(lines[2]["message"]["content"][0]["type"], "tool_result");
    assert_eq!(lines[2]["message"]["content"][0]["content"], "ran ls");
    assert_eq!(lines[3]["message"]["content"][0]["text"], "Listed.");
    assert_eq!(lines[1]["parentUuid"], lines[0]["uuid"]);
    assert!(text.contains(r#""role":"assistant""#), "compact separators");
    let session = lines[0]["sessionId"].as_str().unwrap();
    assert!(lines.iter().all(|l| l["sessionId"] == session));
}

#[tokio::test]
async fn session_start_fires_once_per_session_with_an_env_file_and_adds_context() {
    let p = Project::new();
    p.script(
        "start.sh",
        "#!/bin/sh\ntest -n \"$CLAUDE_ENV_FILE\" || exit 1\necho \"$(jq -r .source)\" >> \"$CLAUDE_PROJECT_DIR/starts.txt\"\necho 'Branch: main'\n",
    );
    let settings = json!({"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [
        {"type": "command", "command": ".claude/hooks/start.sh"}
    ]}]}});
    let runtime = Runtime::new().with(p.hooks(settings));
    let log = new_log();
    for input in ["one", "two"] {
        let model = ScriptedModel::new().text("ok");
        runtime
            .run(&agent(&model, &log), input)
            .with(RunOptions::new().session("s-1"))
            .start()
            .result()
            .await
            .unwrap();
        let prompt = model.requests()[0]
            .messages
            .last()
            .unwrap()
            .text()
            .to_string();
        if input == "one" {
            assert!(prompt.contains("Branch: main"), "{prompt}");
        }
    }
    assert_eq!(p.read("starts.txt"), "startup\n", "once for the session");
}

#[tokio::test]
async fn permission_request_decides_approvals_and_notification_observes_them() {
    let p = Project::new();
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'"#;
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'"#;
    let notify =
        r#"jq -r '.notification_type + ": " + .message' >> "$CLAUDE_PROJECT_DIR/notes.txt""#;
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ask}]}],
        "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": allow}]}],
        "Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": notify}]}]
    }});
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("ok");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "ok");
    assert_eq!(
        entries(&log),
        ["bash:ls"],
        "approved by the hook, the call ran"
    );
    assert_eq!(
        p.read("notes.txt"),
        "permission_prompt: agentry needs your permission to use Bash\n"
    );
}

#[tokio::test]
async fn a_session_seen_by_an_earlier_process_starts_as_resume() {
    let p = Project::new();
    p.script(
        "start.sh",
        "#!/bin/sh\necho \"$(jq -r .source)\" >> \"$CLAUDE_PROJECT_DIR/starts.txt\"\n",
    );
    let settings = json!({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": ".claude/hooks/start.sh"}
    ]}]}});
    let log = new_log();
    // Two processes, one after the other: each its own runtime and command hooks, sharing the
    // project's transcripts.
    for _ in 0..2 {
        let model = ScriptedModel::new().text("ok");
        Runtime::new()
            .with(p.hooks(settings.clone()))
            .run(&agent(&model, &log), "hi")
            .with(RunOptions::new().session("s-2"))
            .await
            .unwrap();
    }
    assert_eq!(p.read("starts.txt"), "startup\nresume\n");
}

#[tokio::test]
async fn a_compacted_session_starts_again_and_its_context_survives_the_summary() {
    let p = Project::new();
    p.script(
        "start.sh",
        "#!/bin/sh\nsource=$(jq -r .source)\necho \"$source\" >> \"$CLAUDE_PROJECT_DIR/starts.txt\"\necho \"Remember: the build uses make ($source)\"\n",
    );
    let settings = json!({"hooks": {"SessionStart": [{"matcher": "startup|compact", "hooks": [
        {"type": "command", "command": ".claude/hooks/start.sh"}
    ]}]}});
    #[derive(Deserialize, JsonSchema)]
    struct Query {
        #[allow(dead_code)]
        q: String,
    }
    let model = ScriptedModel::from_fn(|n, _| {
        if n <= 4 {
            ScriptedTurn::tool_call("lookup", json!({"q": format!("topic {n}")}))
        } else {
            ScriptedTurn::text("All done.")
        }
    })
    .record_requests(true);
    let agent = Agent::builder("researcher")
        .model(model.clone())
        .tool(tool(
            "lookup",
            "Looks up.",
            |_a: Query, _c: ToolCtx| async { Ok("x".repeat(800)) },
        ))
        .compaction(Compaction::window(300).keep_recent(2))
        .build()
        .unwrap();
    let out = Runtime::new()
        .with(p.hooks(settings))
        .run(&agent, "Research.")
        .await
        .unwrap();
    assert_eq!(out.text, "All done.");
    let starts = p.read("starts.txt");
    assert!(starts.starts_with("startup\ncompact\n"), "{starts}");
    // After the compaction, the model still gets what the SessionStart hook said.
    let last = model.requests().last().unwrap().clone();
    let seen: String = last.messages.iter().map(|m| m.text().to_string()).collect();
    assert!(
        seen.contains("Remember: the build uses make (compact)"),
        "{seen}"
    );
}

#[tokio::test]
async fn a_conversation_s_session_ends_when_its_owner_ends_it() {
    let p = Project::new();
    p.script(
        "end.sh",
        "#!/bin/sh\njq -c '{reason, session_id, hook_event_name, t: (.transcript_path | length > 0)}' >> \"$CLAUDE_PROJECT_DIR/ends.txt\"\n",
    );
    let settings = json!({"hooks": {"SessionEnd": [{"matcher": "prompt_input_exit", "hooks": [
        {"type": "command", "command": ".claude/hooks/end.sh"}
    ]}]}});
    let (hook, sessions) = p.hooks(settings).into_hook_and_sessions();
    let runtime = Runtime::new().with(hook);
    let log = new_log();
    for input in ["one", "two"] {
        let model = ScriptedModel::new().text("ok");
        runtime
            .run(&agent(&model, &log), input)
            .with(RunOptions::new().session("chat 1"))
            .await
            .unwrap();
    }
    // Runs of a session do not end it.
    assert!(!p.path("ends.txt").exists());
    sessions.end("chat 1", "prompt_input_exit").await.unwrap();
    let ended: serde_json::Value = serde_json::from_str(p.read("ends.txt").trim()).unwrap();
    assert_eq!(
        ended,
        json!({"reason": "prompt_input_exit", "session_id": "chat_1", "hook_event_name": "SessionEnd", "t": true})
    );
    // Another reason does not match the hook's matcher.
    sessions.end("chat 1", "clear").await.unwrap();
    assert_eq!(p.read("ends.txt").lines().count(), 1);
}
