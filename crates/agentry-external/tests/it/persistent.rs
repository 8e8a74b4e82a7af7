//! Persistent hook processes: one long-lived process answers every event as JSON lines; many
//! events in flight at once; restarted when it dies, with the events it left failing open;
//! stopped with the runtime.

use crate::common::*;
use agentry::prelude::*;
use std::time::{Duration, Instant};

fn example(name: &str) -> String {
    format!("{}/examples/hooks/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn persistent(event: &str, matcher: &str, command: &str, timeout: u64) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "persistent", "command": command, "timeout": timeout}
    ]}]}})
}

/// Runs `model` with one persistent PreToolUse hook on every tool (`command`, answering within
/// `timeout` seconds) and a log of hook failures; returns what the tools logged and the failures.
async fn run_with(
    p: &Project,
    command: &str,
    timeout: u64,
    model: &ScriptedModel,
) -> (Vec<String>, Vec<String>) {
    let (log, failed) = (new_log(), new_log());
    Runtime::new()
        .with(p.hooks(persistent("PreToolUse", "", command, timeout)))
        .with(failures(&failed))
        .run(&agent(model, &log), "go")
        .await
        .unwrap();
    (entries(&log), entries(&failed))
}

fn rm_ls_then_done() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "rm -rf build"}))
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.")
}

async fn guard_with(command: &str) {
    let p = Project::new();
    let (model, log) = (rm_ls_then_done(), new_log());
    Runtime::new()
        .with(p.hooks(persistent("PreToolUse", "Bash", command, 30)))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(entries(&log), ["bash:ls"], "{command}");
    assert_eq!(result_sent(&model, 1).content, "rm -rf is not allowed here");
}

#[tokio::test]
async fn the_python_example_guards_tool_calls() {
    guard_with(&format!("python3 {}", example("guard.py"))).await;
}

#[tokio::test]
async fn the_node_example_guards_tool_calls() {
    guard_with(&format!("node {}", example("guard.js"))).await;
}

/// A server that logs its start, answers each event from a thread of its own after `delay`
/// seconds (so answers come out of order), exits on `crash` and never answers `hang`.
const SERVER: &str = r#"#!/usr/bin/env python3
import json, os, sys, threading, time
root = os.environ["CLAUDE_PROJECT_DIR"]
with open(os.path.join(root, "starts.log"), "a") as f:
    f.write(f"{os.getpid()}\n")
lock = threading.Lock()
def handle(req):
    cmd = req["input"].get("tool_input", {}).get("command", "")
    if cmd == "crash":
        sys.stderr.write("fatal: cannot go on\n"); sys.stderr.flush()
        os._exit(3)
    if cmd == "hang":
        return
    if cmd.startswith("sleep "):
        time.sleep(float(cmd.split()[1]))
    with lock:
        print(json.dumps({"id": req["id"]}), flush=True)
for line in sys.stdin:
    threading.Thread(target=handle, args=(json.loads(line),)).start()
"#;

#[tokio::test]
async fn events_are_answered_concurrently_by_one_process() {
    let p = Project::new();
    p.script("server.py", SERVER);
    let calls: Vec<(&str, Value)> = (0..4)
        .map(|_| ("bash", json!({"cmd": "sleep 0.5"})))
        .collect();
    let model = ScriptedModel::new().tool_calls(calls).text("Done.");
    let log = new_log();
    let started = Instant::now();
    Runtime::new()
        .with(p.hooks(persistent(
            "PreToolUse",
            "",
            "python3 .claude/hooks/server.py",
            30,
        )))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(entries(&log).len(), 4);
    assert_eq!(
        p.read("starts.log").lines().count(),
        1,
        "one process for every event"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1900),
        "four 0.5 s answers in flight at once: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_crash_fails_the_event_open_and_the_next_event_restarts_the_process() {
    let p = Project::new();
    p.script("server.py", SERVER);
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .tool_call("bash", json!({"cmd": "crash"}))
        .tool_call("bash", json!({"cmd": "pwd"}))
        .text("Done.");
    let (log, failed) = run_with(&p, "python3 .claude/hooks/server.py", 30, &model).await;
    assert_eq!(log, ["bash:ls", "bash:crash", "bash:pwd"], "fail open");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("exited before answering"), "{failed:?}");
    assert!(
        failed[0].contains("fatal: cannot go on"),
        "names its stderr: {failed:?}"
    );
    assert_eq!(p.read("starts.log").lines().count(), 2, "restarted once");
}

/// Answers once three events are in flight: the first in two pieces written 50 ms apart, the
/// other two together in one write, blocking them.
const BATCHING_SERVER: &str = r#"
import json, sys, time
pending = []
for line in sys.stdin:
    pending.append(json.loads(line)["id"])
    if len(pending) == 3:
        first, rest = pending[0], pending[1:]
        sys.stdout.write('{"id": '); sys.stdout.flush()
        time.sleep(0.05)
        sys.stdout.write(str(first) + "}\n" + "".join(json.dumps({"id": i, "block": "batched"}) + "\n" for i in rest))
        sys.stdout.flush()
        pending = []
"#;

#[tokio::test]
async fn answers_split_across_writes_or_sharing_one_reach_their_events() {
    let p = Project::new();
    p.script("batching.py", BATCHING_SERVER);
    let calls: Vec<(&str, Value)> = ["a", "b", "c"]
        .iter()
        .map(|c| ("bash", json!({ "cmd": c })))
        .collect();
    let model = ScriptedModel::new().tool_calls(calls).text("Done.");
    let (log, failed) = run_with(&p, "python3 .claude/hooks/batching.py", 30, &model).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(log.len(), 1, "one call let through: {:?}", log);
    let blocked = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| m.tool_result())
        .filter(|r| r.is_error && r.content == "batched")
        .count();
    assert_eq!(blocked, 2, "two calls blocked by answers written together");
}

#[tokio::test]
async fn a_process_that_closes_its_stdout_fails_the_waiting_event_at_once() {
    let p = Project::new();
    p.script(
        "mute.py",
        "import os, sys, time\nsys.stdin.readline()\nos.close(1)\ntime.sleep(30)\n",
    );
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let started = Instant::now();
    // `exec`: a shell left waiting for it would hold the pipe open.
    let (log, failed) = run_with(&p, "exec python3 .claude/hooks/mute.py", 20, &model).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?} for a process that can no longer answer",
        started.elapsed()
    );
    assert_eq!(log, ["bash:ls"], "fail open");
    assert!(failed[0].contains("exited before answering"), "{failed:?}");
}

#[tokio::test]
async fn an_event_it_never_answers_times_out_and_the_run_goes_on() {
    let p = Project::new();
    p.script("server.py", SERVER);
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "hang"}))
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let started = Instant::now();
    let (log, failed) = run_with(&p, "python3 .claude/hooks/server.py", 1, &model).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(log, ["bash:hang", "bash:ls"]);
    assert!(failed[0].contains("no answer within 1s"), "{failed:?}");
    assert_eq!(
        p.read("starts.log").lines().count(),
        1,
        "a slow answer is not a death"
    );
}

#[tokio::test]
async fn a_process_that_cannot_start_fails_open_and_the_run_goes_on() {
    let p = Project::new();
    let model = rm_ls_then_done();
    let (log, failed) = run_with(&p, "exec /nonexistent/hook-server", 5, &model).await;
    assert_eq!(log.len(), 2);
    assert_eq!(failed.len(), 2, "{failed:?}");
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn the_process_stops_with_the_runtime() {
    let p = Project::new();
    p.script("server.py", SERVER);
    let (model, log) = (rm_ls_then_done(), new_log());
    let runtime = Runtime::new().with(p.hooks(persistent(
        "PreToolUse",
        "",
        "python3 .claude/hooks/server.py",
        30,
    )));
    runtime.run(&agent(&model, &log), "go").await.unwrap();
    let pid: i32 = p.read("starts.log").trim().parse().unwrap();
    assert!(alive(pid), "it lives between runs");
    drop(runtime);
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "killed when the runtime was dropped");
}
