//! Command hooks are data: a run's hooks attached with `RunOptions::with_stored` are stored with
//! its checkpoints, and a runtime in another process that resumes the run gets them back.
//!
//! `child_starts_the_run` is not a test of its own: it is the other process, started by the
//! tests here with `AGENTRY_EXTERNAL_TEST_CHILD` set.

use crate::common::*;
use agentry::Decision;
use agentry::RunOptions;
use agentry::prelude::*;
use agentry_external::CommandHooks;
use agentry_store::SqliteStore;
use std::path::Path;
use std::process::Command;

const CHILD: &str = "AGENTRY_EXTERNAL_TEST_CHILD";

const GUARD: &str = r#"#!/bin/sh
input=$(cat)
cmd=$(echo "$input" | jq -r .tool_input.command)
echo "$$ $cmd" >> "$CLAUDE_PROJECT_DIR/hooks.log"
case "$cmd" in
  ls) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"listing needs a yes"}}' ;;
  rm*) echo 'no rm from the stored hook' >&2; exit 2 ;;
esac
"#;

fn settings() -> Value {
    one("PreToolUse", "Bash", ".claude/hooks/guard.sh")
}

fn stored_hooks(root: &Path) -> CommandHooks {
    CommandHooks::load(root.join(".claude/settings.json"))
        .unwrap()
        .state_dir(root.join("state"))
}

/// The other process: starts run `r-1` with the command hooks stored on it; the hook asks for
/// approval of its first call, so the run pauses and the process exits.
#[tokio::test]
async fn child_starts_the_run() {
    let Ok(root) = std::env::var(CHILD) else {
        return;
    };
    let root = Path::new(&root);
    let store = SqliteStore::open(root.join("runs.db")).await.unwrap();
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("never");
    let log = new_log();
    let out = Runtime::new()
        .store(store)
        .run(&agent(&model, &log), "tidy up")
        .with(
            RunOptions::new()
                .run_id("r-1")
                .with_stored(stored_hooks(root)),
        )
        .start()
        .result()
        .await
        .unwrap();
    assert!(
        matches!(out.stop, StopReason::AwaitingApproval { .. }),
        "{:?}",
        out.stop
    );
}

/// Starts the run in another process, which leaves it paused.
fn start_in_another_process(p: &Project) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "resume::child_starts_the_run",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, p.root())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(p.read("hooks.log").lines().count(), 1, "the hook ran there");
}

async fn pending_call(store: &SqliteStore) -> String {
    use agentry::RunStore;
    let run = store.load("r-1").await.unwrap().unwrap();
    match run.snapshot.stop {
        Some(StopReason::AwaitingApproval { pending }) => pending[0].call_id.clone(),
        other => panic!("the run is not paused: {other:?}"),
    }
}

#[tokio::test]
async fn a_run_resumed_in_a_new_process_keeps_its_command_hooks() {
    let p = Project::new();
    p.script("guard.sh", GUARD);
    p.hooks(settings());
    start_in_another_process(&p);

    let store = SqliteStore::open(p.path("runs.db")).await.unwrap();
    let call = pending_call(&store).await;
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "rm -rf /"}))
        .text("Stopped.");
    let log = new_log();
    // No hook registered here: the run brings its own.
    let out = Runtime::new()
        .store(store)
        .restores::<CommandHooks>()
        .decide(&agent(&model, &log), "r-1", [Decision::approve(call)])
        .await
        .unwrap();
    assert_eq!(out.text, "Stopped.");
    assert_eq!(
        entries(&log),
        ["bash:ls"],
        "the approved call ran, the rm did not"
    );
    assert_eq!(result_sent(&model, 1).content, "no rm from the stored hook");
    let pids: Vec<String> = p
        .read("hooks.log")
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(pids.len(), 3, "ls there, ls approved and rm here: {pids:?}");
}

#[tokio::test]
async fn resuming_without_knowing_the_kind_is_an_error_naming_it() {
    let p = Project::new();
    p.script("guard.sh", GUARD);
    p.hooks(settings());
    start_in_another_process(&p);

    let store = SqliteStore::open(p.path("runs.db")).await.unwrap();
    let call = pending_call(&store).await;
    let (model, log) = (ScriptedModel::new().text("x"), new_log());
    let err = Runtime::new()
        .store(store)
        .decide(&agent(&model, &log), "r-1", [Decision::approve(call)])
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("agentry-external/command-hooks"), "{text}");
    assert!(text.contains("Runtime::restores"), "{text}");
    assert!(entries(&log).is_empty(), "nothing ran");
}

#[test]
fn the_stored_spec_round_trips() {
    use agentry::hooks::StoredHook;
    let p = Project::new();
    let hooks = p.hooks(settings()).fail_closed();
    let spec = hooks.spec();
    let again = CommandHooks::from_spec(&spec).unwrap();
    assert_eq!(again.spec(), spec);
    assert_eq!(spec["fail_closed"], true);
    assert_eq!(
        spec["settings"]["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        ".claude/hooks/guard.sh"
    );
}
