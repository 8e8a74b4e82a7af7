//! Any agentry event as a script, under its own name with its payload as JSON; and sub-agents'
//! events (SubagentStart, SubagentStop) with Claude Code's names.

use crate::common::*;
use agentry::prelude::*;

#[tokio::test]
async fn after_model_block_retries_the_turn_with_the_reason_as_feedback() {
    let p = Project::new();
    p.script(
        "polite.py",
        r#"#!/usr/bin/env python3
import json, sys
d = json.load(sys.stdin)
assert d["hook_event_name"] == "AfterModel", d
if "please" not in d["text"]:
    print(json.dumps({"decision": "block", "reason": "say please"}))
"#,
    );
    let model = ScriptedModel::new().text("Do it.").text("Do it, please.");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(one("AfterModel", "", "python3 .claude/hooks/polite.py")))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Do it, please.");
    let retry = &model.requests()[1].messages;
    assert!(retry.iter().any(|m| m.text().contains("say please")));
}

#[tokio::test]
async fn before_tool_under_its_own_name_sees_agentry_names_and_rewrites_the_input() {
    let p = Project::new();
    let rewrite = r#"jq -c '{hookSpecificOutput: {hookEventName: "BeforeTool", updatedInput: {cmd: (.tool_name + ":" + .tool_input.cmd)}}}'"#;
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("ok");
    let log = new_log();
    Runtime::new()
        .with(p.hooks(one("BeforeTool", "bash", rewrite)))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(entries(&log), ["bash:bash:ls"]);
}

#[tokio::test]
async fn after_step_block_stops_the_run_and_observers_see_every_message() {
    let p = Project::new();
    let stop = r#"[ "$(jq .step)" = 1 ] && echo '{"decision":"block","reason":"one step is enough"}'; exit 0"#;
    let observe = r#"jq -c '[.message.role, .agentry.step]' >> "$CLAUDE_PROJECT_DIR/messages.log""#;
    let settings = json!({"hooks": {
        "AfterStep": [{"hooks": [{"type": "command", "command": stop}]}],
        "MessageAdded": [{"hooks": [{"type": "command", "command": observe}]}]
    }});
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("never");
    let log = new_log();
    let out = Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    match &out.stop {
        StopReason::Hook { reason, .. } => assert_eq!(reason, "one step is enough"),
        other => panic!("expected a hook stop, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        p.read("messages.log"),
        "[\"user\",0]\n[\"assistant\",1]\n[\"tool\",1]\n"
    );
}

#[tokio::test]
async fn subagent_start_and_stop_fire_for_the_child_run() {
    let p = Project::new();
    p.script(
        "sub.sh",
        r#"#!/bin/bash
input=$(cat)
event=$(echo "$input" | jq -r .hook_event_name)
echo "$event $(echo "$input" | jq -r .agent_type) $(echo "$input" | jq -r .stop_hook_active)" >> "$CLAUDE_PROJECT_DIR/sub.log"
if [[ "$event" == SubagentStop ]]; then
  test -f "$(echo "$input" | jq -r .agent_transcript_path)" || exit 1
  if [[ "$(echo "$input" | jq -r .stop_hook_active)" == false ]]; then
    echo '{"decision":"block","reason":"double-check the capital"}'
  fi
fi
"#,
    );
    let settings = json!({"hooks": {
        "SubagentStart": [{"matcher": "researcher", "hooks": [{"type": "command", "command": ".claude/hooks/sub.sh"}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": ".claude/hooks/sub.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": ".claude/hooks/sub.sh"}]}]
    }});
    let child_model = ScriptedModel::new().text("Paris.").text("Paris, surely.");
    let child = Agent::builder("researcher")
        .model(child_model.clone())
        .build()
        .unwrap();
    let parent_model = ScriptedModel::new()
        .tool_call("researcher", json!({"input": "capital of France?"}))
        .text("Paris.");
    let parent = Agent::builder("lead")
        .model(parent_model.clone())
        .sub_agent(&child)
        .build()
        .unwrap();
    let out = Runtime::new()
        .with(p.hooks(settings))
        .run(&parent, "ask the researcher")
        .await
        .unwrap();
    assert_eq!(out.text, "Paris.");
    assert_eq!(
        p.read("sub.log"),
        "SubagentStart researcher null\n\
         SubagentStop researcher false\n\
         SubagentStop researcher true\n\
         Stop null false\n"
    );
    assert!(
        result_sent(&parent_model, 1)
            .content
            .text()
            .contains("Paris, surely.")
    );
}

#[tokio::test]
async fn tool_batches_as_scripts_block_together_and_are_observed_together() {
    let p = Project::new();
    let guard = r#"jq -e '[.tool_calls[].tool_input.cmd] | any(startswith("rm"))' >/dev/null && echo '{"decision":"block","reason":"this turn deletes things"}'; exit 0"#;
    let observe = r#"jq -c '[.hook_event_name, [.tool_calls[] | .tool_name + ":" + .tool_response]]' >> "$CLAUDE_PROJECT_DIR/batches.log""#;
    let settings = json!({"hooks": {
        "BeforeToolBatch": [{"hooks": [{"type": "command", "command": guard}]}],
        "PostToolBatch": [{"hooks": [{"type": "command", "command": observe}]}]
    }});
    let model = ScriptedModel::new()
        .tool_calls([
            ("bash", json!({"cmd": "ls"})),
            ("bash", json!({"cmd": "pwd"})),
        ])
        .tool_calls([
            ("bash", json!({"cmd": "ls"})),
            ("bash", json!({"cmd": "rm -rf x"})),
        ])
        .text("Done.");
    let log = new_log();
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(
        entries(&log),
        ["bash:ls", "bash:pwd"],
        "the second batch was blocked whole"
    );
    assert_eq!(
        p.read("batches.log"),
        "[\"PostToolBatch\",[\"Bash:ran ls\",\"Bash:ran pwd\"]]\n\
         [\"PostToolBatch\",[\"Bash:this turn deletes things\",\"Bash:this turn deletes things\"]]\n"
    );
}
