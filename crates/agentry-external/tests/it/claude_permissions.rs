//! PreToolUse's `allow` with real scripts: a call of a tool that wants approval runs without
//! asking anyone, rewritten when the answer carries `updatedInput`, with the hook's reason
//! recorded as the decision; the tool policy's rules that ask or deny still apply.

use crate::common::*;
use agentry::builtins::ToolPolicy;
use agentry::prelude::*;
use agentry::{Message, ScriptedTurn, ToolFailure};
use futures::StreamExt;

/// An agent whose `bash` tool (Bash) needs approval, calling it once with `cmd`.
fn agent(cmd: &str, log: &Log) -> Agent {
    let cmd = cmd.to_string();
    let model = ScriptedModel::from_fn(move |_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("done")
        } else {
            ScriptedTurn::new().with_tool_call_id("b1", "bash", json!({ "cmd": cmd }))
        }
    });
    let log = log.clone();
    Agent::builder("coder")
        .model(model)
        .tool(
            tool("bash", "Run a command", move |a: Cmd, _ctx: ToolCtx| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(format!("bash:{}", a.cmd));
                    Ok::<_, ToolFailure>(format!("ran {}", a.cmd))
                }
            })
            .needs_approval(),
        )
        .build()
        .unwrap()
}

/// The project's PreToolUse script for Bash, printing `answer`.
fn answering(answer: &str) -> (Project, agentry_external::CommandHooks) {
    let p = Project::new();
    p.script(
        "answer.sh",
        &format!("#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n"),
    );
    let hooks = p.hooks(one("PreToolUse", "Bash", ".claude/hooks/answer.sh"));
    (p, hooks)
}

/// How a run went: the calls that ran, whether it paused, and the BeforeTool decisions it
/// recorded (`decision: detail`).
async fn run(runtime: Runtime, agent: &Agent, log: &Log) -> (Vec<String>, bool, Vec<String>) {
    let mut run = runtime.run(agent, "go").start();
    let mut decisions = Vec::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::HookDecision {
            decision, detail, ..
        } = ev
        {
            decisions.push(format!("{decision}: {detail}"));
        }
    }
    let out = run.result().await.unwrap();
    (entries(log), out.stop.is_paused(), decisions)
}

#[tokio::test]
async fn allow_runs_a_call_that_wants_approval_and_records_the_hooks_reason() {
    let (_p, hooks) = answering(
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ls is harmless"}}"#,
    );
    let log = new_log();
    let (ran, paused, decisions) = run(Runtime::new().with(hooks), &agent("ls", &log), &log).await;
    assert!(!paused, "nobody is asked");
    assert_eq!(ran, ["bash:ls"]);
    assert_eq!(decisions, ["allowed: ls is harmless"]);
}

#[tokio::test]
async fn allow_with_updated_input_rewrites_and_runs() {
    let (_p, hooks) = answering(
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "make --dry-run"}}}"#,
    );
    let log = new_log();
    let (ran, paused, decisions) =
        run(Runtime::new().with(hooks), &agent("make", &log), &log).await;
    assert!(!paused);
    assert_eq!(ran, ["bash:make --dry-run"]);
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert!(
        decisions[0].starts_with("rewrote the input: "),
        "{decisions:?}"
    );
    assert!(decisions[1].starts_with("allowed: "), "{decisions:?}");
}

#[tokio::test]
async fn the_legacy_approve_allows_and_no_answer_or_ask_still_asks() {
    let cases = [
        (r#"{"decision": "approve", "reason": "fine"}"#, false),
        ("", true),
        (
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}"#,
            true,
        ),
    ];
    for (answer, asks) in cases {
        let (_p, hooks) = answering(answer);
        let log = new_log();
        let (ran, paused, _) = run(Runtime::new().with(hooks), &agent("ls", &log), &log).await;
        assert_eq!(paused, asks, "answer {answer:?}");
        assert_eq!(ran.is_empty(), asks, "answer {answer:?}");
    }
}

#[tokio::test]
async fn allow_does_not_pass_the_tool_policys_ask_and_deny_rules() {
    let allow =
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}"#;
    // An approval rule still asks.
    let (_p, hooks) = answering(allow);
    let log = new_log();
    let policy = ToolPolicy::allow_by_default()
        .require_approval("bash")
        .build()
        .unwrap();
    let (ran, paused, _) = run(
        Runtime::new().with(hooks).with(policy),
        &agent("ls", &log),
        &log,
    )
    .await;
    assert!(paused);
    assert!(ran.is_empty());
    // A deny rule still blocks.
    let (_p, hooks) = answering(allow);
    let log = new_log();
    let policy = ToolPolicy::allow_by_default().deny("bash").build().unwrap();
    let (ran, paused, decisions) = run(
        Runtime::new().with(hooks).with(policy),
        &agent("ls", &log),
        &log,
    )
    .await;
    assert!(!paused);
    assert!(ran.is_empty());
    assert!(
        decisions.iter().any(|d| d.starts_with("blocked: ")),
        "{decisions:?}"
    );
}
