//! A server is an unreliable neighbour: small servers written with the official Python `mcp`
//! package (`tests/servers/faults.py`) crash, hang, write garbage, return too much, fail, and
//! change their tool list; each fault reaches the model (and the hooks) as a clear tool error
//! naming the server, and the run goes on.

use crate::common;

use agentry::RunOptions;
use agentry::builtins::ToolPolicy;
use agentry::prelude::*;
use agentry::{RunEvent, ScriptedModel};
use agentry_mcp::{McpServers, ServerSpec};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Seen = Arc<Mutex<Vec<(String, bool)>>>;
/// What ToolFailed hooks saw: the error, the tool's source.
type Errors = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// An agent whose hooks record what the model sees of each call: AfterTool the results,
/// ToolFailed the failures (the model then sees the error).
fn agent(model: ScriptedModel, seen: &Seen) -> Agent {
    let ok = seen.clone();
    let failed = seen.clone();
    Agent::builder("assistant")
        .model(model)
        .after_tool(move |ev, _ctx| {
            let seen = ok.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push((ev.content.text().into_owned(), ev.is_error));
                Ok(ev)
            }
        })
        .tool_failed(move |ev, _ctx| {
            let seen = failed.clone();
            async move {
                seen.lock().unwrap().push((ev.error().to_string(), true));
                Ok(ev)
            }
        })
        .build()
        .unwrap()
}

/// Runs `calls` (tool, arguments) one per step, then a final answer; what the model saw of each.
async fn run_calls(
    servers: &McpServers,
    calls: &[(&str, serde_json::Value)],
) -> Vec<(String, bool)> {
    let mut model = ScriptedModel::new();
    for (tool, args) in calls {
        model = model.tool_call(format!("mcp__faults__{tool}"), args.clone());
    }
    let seen: Seen = Arc::default();
    let out = Runtime::new()
        .run(&agent(model.text("done"), &seen), "go")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    seen.lock().unwrap().clone()
}

fn faults(test: &str, tune: impl FnOnce(ServerSpec) -> ServerSpec) -> Option<McpServers> {
    let spec = common::faults(test)?;
    Some(McpServers::single("faults", tune(spec)).unwrap())
}

/// Waits until the server's log (FAULTS_LOG) has `line`.
async fn logged(log: &std::path::Path, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == line) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server never logged `{line}`: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_restarts() {
    let Some(servers) = faults(
        "a_crash_mid_call_is_a_tool_error_and_the_server_restarts",
        |s| s,
    ) else {
        return;
    };
    let seen = run_calls(
        &servers,
        &[
            ("echo", json!({"text": "before"})),
            ("crash", json!({"text": "x"})),
            ("echo", json!({"text": "after"})),
        ],
    )
    .await;
    // The Python server's tools give structured content, `{"result": ...}`.
    assert_eq!(seen[0], (r#"{"result":"before"}"#.to_string(), false));
    let (crash, is_error) = &seen[1];
    assert!(is_error);
    assert!(crash.contains("MCP server `faults` went away"), "{crash}");
    assert!(
        crash.contains("crashing on purpose"),
        "the stderr tail: {crash}"
    );
    assert_eq!(
        seen[2],
        (r#"{"result":"after"}"#.to_string(), false),
        "restarted"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_hang_past_the_timeout_is_a_tool_error_naming_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("faults.log");
    let Some(servers) = faults(
        "a_hang_past_the_timeout_is_a_tool_error_naming_the_server",
        |s| {
            s.tool_timeout("hang", Duration::from_millis(500))
                .env("FAULTS_LOG", log.display().to_string())
        },
    ) else {
        return;
    };
    let started = Instant::now();
    let seen = run_calls(
        &servers,
        &[("hang", json!({})), ("echo", json!({"text": "still here"}))],
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let (hang, is_error) = &seen[0];
    assert!(is_error);
    assert!(
        hang.contains("MCP server `faults` did not answer `tools/call hang` within 500ms"),
        "{hang}"
    );
    assert_eq!(seen[1], (r#"{"result":"still here"}"#.to_string(), false));
    logged(&log, "hang cancelled").await;
    servers.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_reported_with_the_stderr_tail() {
    let Some(servers) = faults("garbage_on_stdout_is_reported_with_the_stderr_tail", |s| s) else {
        return;
    };
    let seen = run_calls(
        &servers,
        &[("garbage", json!({})), ("echo", json!({"text": "again"}))],
    )
    .await;
    let (garbage, is_error) = &seen[0];
    assert!(is_error, "{garbage}");
    assert!(
        garbage.contains("MCP server `faults` broke the protocol"),
        "{garbage}"
    );
    assert!(garbage.contains("this is not JSON-RPC"), "{garbage}");
    assert!(
        garbage.contains("about to write garbage"),
        "the stderr tail: {garbage}"
    );
    assert_eq!(seen[1], (r#"{"result":"again"}"#.to_string(), false));
    servers.shutdown().await;
}

#[tokio::test]
async fn a_huge_result_is_capped_with_a_clear_error() {
    let Some(servers) = faults("a_huge_result_is_capped_with_a_clear_error", |s| {
        s.max_result_bytes(10_000)
    }) else {
        return;
    };
    let seen = run_calls(
        &servers,
        &[
            ("huge", json!({"size": 9_000})),
            ("huge", json!({"size": 2_000_000})),
        ],
    )
    .await;
    assert!(
        !seen[0].1 && seen[0].0.contains(&"x".repeat(9_000)),
        "under the cap"
    );
    let (huge, is_error) = &seen[1];
    assert!(is_error);
    assert!(
        huge.contains(
            "MCP server `faults` returned 2000013 bytes for `huge`, over the cap of 10000 bytes"
        ),
        "{huge}"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn an_is_error_result_reaches_tool_error_hooks_and_the_model() {
    let Some(servers) = faults(
        "an_is_error_result_reaches_tool_error_hooks_and_the_model",
        |s| s,
    ) else {
        return;
    };
    let errors: Errors = Arc::default();
    let log = errors.clone();
    let seen: Seen = Arc::default();
    let model = ScriptedModel::new()
        .tool_call("mcp__faults__fail", json!({"reason": "no disk"}))
        .text("done");
    let runtime = Runtime::new().with(on::tool_failed(move |ev, _ctx| {
        let log = log.clone();
        async move {
            log.lock()
                .unwrap()
                .push((ev.error().to_string(), ev.source().map(str::to_string)));
            Ok(ev)
        }
    }));
    runtime
        .run(&agent(model, &seen), "go")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap();
    let errors = errors.lock().unwrap().clone();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].0.contains("cannot do that: no disk"),
        "{}",
        errors[0].0
    );
    assert_eq!(errors[0].1.as_deref(), Some("faults"));
    let seen = seen.lock().unwrap().clone();
    assert!(seen[0].1);
    assert!(
        seen[0]
            .0
            .contains("tool `fail` of MCP server `faults` reported an error"),
        "{}",
        seen[0].0
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_seen_from_the_next_step() {
    let Some(servers) = faults("a_changed_tool_list_is_seen_from_the_next_step", |s| s) else {
        return;
    };
    let model = ScriptedModel::new()
        .record_requests(true)
        .tool_call("mcp__faults__grow", json!({}))
        .tool_call("mcp__faults__extra", json!({"text": "hi"}))
        .text("done");
    let seen: Seen = Arc::default();
    let out = Runtime::new()
        .run(&agent(model.clone(), &seen), "go")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let requests = model.requests();
    let has_extra = |i: usize| {
        requests[i]
            .tools
            .iter()
            .any(|t| t.name == "mcp__faults__extra")
    };
    assert!(!has_extra(0), "not there before it was added");
    assert!(has_extra(1), "there from the step after list_changed");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[1], (r#"{"result":"extra: hi"}"#.to_string(), false));
    servers.shutdown().await;
}

#[tokio::test]
async fn the_tool_policy_asks_before_destructive_tools() {
    let Some(servers) = faults("the_tool_policy_asks_before_destructive_tools", |s| s) else {
        return;
    };
    let model = ScriptedModel::new()
        .tool_call("mcp__faults__echo", json!({"text": "harmless"}))
        .tool_call("mcp__faults__wipe", json!({"path": "/data"}))
        .text("done");
    let seen: Seen = Arc::default();
    let agent = Agent::builder("assistant")
        .model(model)
        .with(ToolPolicy::for_mcp().build().unwrap())
        .build()
        .unwrap();
    let _ = &seen;
    let out = common::run_on(&agent, &servers).await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("the destructive call waits for approval: {:?}", out.stop);
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool, "mcp__faults__wipe");
    assert!(
        pending[0].reason.contains("destructive"),
        "{}",
        pending[0].reason
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn progress_and_cancellation_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("faults.log");
    let Some(python_servers) = faults("progress_and_cancellation_reach_the_server", |s| {
        s.env("FAULTS_LOG", log.display().to_string())
    }) else {
        return;
    };
    // Progress of a Python server's tool becomes run events.
    let model = ScriptedModel::new()
        .tool_call("mcp__faults__steps", json!({"count": 4}))
        .tool_call("mcp__faults__hang", json!({}))
        .text("never");
    let seen: Seen = Arc::default();
    let mut handle = Runtime::new()
        .run(&agent(model, &seen), "go")
        .with(RunOptions::new().with_tools(python_servers.clone()))
        .start();
    let mut progress = 0;
    let mut hanging = false;
    while let Some(event) = futures::StreamExt::next(&mut handle.events()).await {
        match event {
            RunEvent::Custom { name, .. } if name == agentry_mcp::PROGRESS_EVENT => progress += 1,
            RunEvent::ToolStarted { name, .. } if name == "mcp__faults__hang" => {
                hanging = true;
                // Cancelling the run drops the call, which sends notifications/cancelled.
                tokio::time::sleep(Duration::from_millis(300)).await;
                handle.cancel();
            }
            _ => {}
        }
    }
    assert!(hanging);
    assert_eq!(progress, 4);
    let out = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    // The server got notifications/cancelled and cancelled its handler.
    logged(&log, "hang cancelled").await;
    python_servers.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_process_group_and_leaves_no_zombie() {
    let Some(servers) = faults(
        "shutdown_kills_the_process_group_and_leaves_no_zombie",
        |s| s,
    ) else {
        return;
    };
    servers.connect().await.unwrap();
    let pid = servers.pid("faults").await.expect("the server runs");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    servers.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < deadline,
            "process {pid} is still there (or a zombie)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_clear_error() {
    let servers = McpServers::single(
        "missing",
        ServerSpec::stdio("/nonexistent/agentry-mcp-server"),
    )
    .unwrap();
    let e = servers.connect().await.unwrap_err().to_string();
    assert!(
        e.contains("MCP server `missing` could not be started"),
        "{e}"
    );
    let Some(python) = common::python("a_server_that_cannot_start_is_a_clear_error") else {
        return;
    };
    let servers = McpServers::single(
        "silent",
        ServerSpec::stdio(python).args([
            "-c",
            "import sys; print('no handshake here', file=sys.stderr)",
        ]),
    )
    .unwrap();
    let e = servers.connect().await.unwrap_err().to_string();
    assert!(
        e.contains("MCP server `silent` failed to initialize"),
        "{e}"
    );
    assert!(e.contains("no handshake here"), "{e}");
}

#[tokio::test]
async fn a_protocol_version_this_client_does_not_speak_is_a_clear_error() {
    let Some(python) =
        common::python("a_protocol_version_this_client_does_not_speak_is_a_clear_error")
    else {
        return;
    };
    // A server that answers `initialize` with a version from the future (raw JSON-RPC: no SDK
    // would answer so).
    let script = r#"
import json, sys
request = json.loads(sys.stdin.readline())
print("answering with a version from the future", file=sys.stderr, flush=True)
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
    "protocolVersion": "2099-01-01", "capabilities": {"tools": {}},
    "serverInfo": {"name": "future", "version": "1"}}}), flush=True)
sys.stdin.readline()
"#;
    let servers =
        McpServers::single("future", ServerSpec::stdio(python).args(["-c", script])).unwrap();
    let e = servers.connect().await.unwrap_err().to_string();
    assert!(
        e.contains("MCP server `future` failed to initialize"),
        "{e}"
    );
    assert!(e.contains("2099-01-01"), "{e}");
}
