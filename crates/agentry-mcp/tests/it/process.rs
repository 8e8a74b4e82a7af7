//! A stdio server's process: it sees only a small allowlist of agentry's environment plus its
//! own `env`; shutdown closes its stdin and gives it a grace period before SIGTERM and SIGKILL;
//! a call that hangs the server ends its process when the call times out or its run is
//! cancelled, while a server that still answers is left running.

use crate::common;

use agentry::RunOptions;
use agentry::prelude::*;
use agentry::{RunEvent, ScriptedModel};
use agentry_mcp::{DEFAULT_INHERITED_ENV, McpServers, ServerSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs one call of `tool` and a final answer; the text of what the model saw of the call.
async fn call_once(servers: &McpServers, tool: &str) -> String {
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let (ok, failed) = (seen.clone(), seen.clone());
    let agent = Agent::builder("assistant")
        .model(ScriptedModel::new().tool_call(tool, json!({})).text("done"))
        .after_tool(move |ev, _ctx| {
            let seen = ok.clone();
            async move {
                seen.lock().unwrap().push(ev.content.text().into_owned());
                Ok(ev)
            }
        })
        .tool_failed(move |ev, _ctx| {
            let seen = failed.clone();
            async move {
                seen.lock().unwrap().push(ev.error().to_string());
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    common::run_on(&agent, servers).await.unwrap();
    let seen = seen.lock().unwrap();
    seen.first().cloned().expect("the call was seen")
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_server_sees_only_the_allowlisted_environment_and_its_own() {
    let Some(spec) = common::raw(
        "a_server_sees_only_the_allowlisted_environment_and_its_own",
        json!({"tools": [common::raw_tool("env")], "answers": {"env": {"env": true}}}),
    ) else {
        return;
    };
    let ours: BTreeMap<String, String> = std::env::vars().collect();
    let passed_by_name = "CARGO_MANIFEST_DIR";
    assert!(ours.contains_key(passed_by_name), "cargo sets it for tests");
    let servers = McpServers::single(
        "envy",
        spec.env("GIVEN", "by its config")
            .inherit_env(passed_by_name),
    )
    .unwrap();
    let text = call_once(&servers, "mcp__envy__env").await;
    let theirs: BTreeMap<String, String> = serde_json::from_str(&text).expect(&text);
    assert_eq!(theirs["GIVEN"], "by its config");
    assert_eq!(theirs[passed_by_name], ours[passed_by_name]);
    assert_eq!(theirs.get("PATH"), ours.get("PATH"));
    // Every other variable of this process (CARGO_*, AGENTRY_*, whatever keys the machine
    // has) stays here.
    let private: Vec<&String> = ours
        .keys()
        .filter(|k| !DEFAULT_INHERITED_ENV.contains(&k.as_str()) && *k != passed_by_name)
        .collect();
    assert!(!private.is_empty());
    for key in private {
        assert!(
            theirs.get(key) != ours.get(key),
            "`{key}` of agentry's environment reached the server"
        );
    }
    servers.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_stdin_and_the_server_exits_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("raw.log");
    let Some(spec) = common::raw(
        "shutdown_closes_stdin_and_the_server_exits_by_itself",
        json!({"tools": [common::raw_tool("echo")]}),
    ) else {
        return;
    };
    let servers =
        McpServers::single("polite", spec.env("RAW_LOG", log.display().to_string())).unwrap();
    servers.connect().await.unwrap();
    let pid = servers.pid("polite").await.unwrap();
    servers.shutdown().await;
    assert!(common::gone(pid, Duration::from_secs(5)).await);
    assert_eq!(log_lines(&log), ["stdin closed"], "no signal was needed");
}

#[tokio::test]
async fn a_server_that_ignores_stdin_gets_sigterm_then_sigkill_after_its_grace() {
    let test = "a_server_that_ignores_stdin_gets_sigterm_then_sigkill_after_its_grace";
    let dir = tempfile::tempdir().unwrap();
    for stubborn in [false, true] {
        let log = dir.path().join(format!("raw-{stubborn}.log"));
        let Some(spec) = common::raw(
            test,
            json!({"ignore_eof": true, "ignore_sigterm": stubborn}),
        ) else {
            return;
        };
        let grace = Duration::from_millis(300);
        let servers = McpServers::single(
            "stubborn",
            spec.env("RAW_LOG", log.display().to_string())
                .shutdown_grace(grace),
        )
        .unwrap();
        servers.connect().await.unwrap();
        let pid = servers.pid("stubborn").await.unwrap();
        let started = Instant::now();
        servers.shutdown().await;
        let took = started.elapsed();
        assert!(common::gone(pid, Duration::from_secs(5)).await);
        assert_eq!(log_lines(&log), ["stdin closed", "SIGTERM"]);
        let least = if stubborn { grace * 2 } else { grace };
        assert!(took >= least, "{took:?}: given its grace");
        assert!(took < least + Duration::from_secs(2), "{took:?}");
    }
}

#[tokio::test]
async fn a_call_that_hangs_the_server_ends_its_process_when_it_times_out() {
    let Some(spec) = common::raw(
        "a_call_that_hangs_the_server_ends_its_process_when_it_times_out",
        json!({
            "tools": [common::raw_tool("stuck"), common::raw_tool("echo")],
            "answers": {"stuck": {"block": 3600}}
        }),
    ) else {
        return;
    };
    let servers = McpServers::single(
        "stuck",
        spec.tool_timeout("stuck", Duration::from_millis(300)),
    )
    .unwrap();
    servers.connect().await.unwrap();
    let pid = servers.pid("stuck").await.unwrap();
    let error = call_once(&servers, "mcp__stuck__stuck").await;
    assert!(
        error.contains("MCP server `stuck` did not answer `tools/call stuck` within 300ms"),
        "{error}"
    );
    // It does not answer the ping that follows the cancellation: its process is ended.
    assert!(
        common::gone(pid, Duration::from_secs(6)).await,
        "process {pid} of the hung server is still there"
    );
    assert_eq!(
        call_once(&servers, "mcp__stuck__echo").await,
        "{}",
        "started again"
    );
    assert_ne!(servers.pid("stuck").await, Some(pid));
    servers.shutdown().await;
}

#[tokio::test]
async fn a_call_that_hangs_the_server_ends_its_process_when_the_run_is_cancelled() {
    let Some(spec) = common::raw(
        "a_call_that_hangs_the_server_ends_its_process_when_the_run_is_cancelled",
        json!({"tools": [common::raw_tool("stuck")], "answers": {"stuck": {"block": 3600}}}),
    ) else {
        return;
    };
    let servers = McpServers::single("stuck", spec).unwrap();
    servers.connect().await.unwrap();
    let pid = servers.pid("stuck").await.unwrap();
    let agent = Agent::builder("assistant")
        .model(
            ScriptedModel::new()
                .tool_call("mcp__stuck__stuck", json!({}))
                .text("never"),
        )
        .build()
        .unwrap();
    let mut handle = Runtime::new()
        .run(&agent, "go")
        .with(RunOptions::new().with_tools(servers.clone()))
        .start();
    while let Some(event) = futures::StreamExt::next(&mut handle.events()).await {
        if matches!(event, RunEvent::ToolStarted { .. }) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            handle.cancel();
        }
    }
    assert_eq!(handle.result().await.unwrap().stop, StopReason::Cancelled);
    assert!(
        common::gone(pid, Duration::from_secs(6)).await,
        "process {pid} of the hung server is still there"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_still_answers_after_a_timed_out_call_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("raw.log");
    let Some(spec) = common::raw(
        "a_server_that_still_answers_after_a_timed_out_call_keeps_running",
        json!({"tools": [common::raw_tool("slow")], "answers": {"slow": {"ignore": true}}}),
    ) else {
        return;
    };
    let servers = McpServers::single(
        "alive",
        spec.tool_timeout("slow", Duration::from_millis(200))
            .env("RAW_LOG", log.display().to_string()),
    )
    .unwrap();
    servers.connect().await.unwrap();
    let pid = servers.pid("alive").await.unwrap();
    let error = call_once(&servers, "mcp__alive__slow").await;
    assert!(error.contains("did not answer"), "{error}");
    // Past the time a hung server has to answer the ping.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(servers.pid("alive").await, Some(pid), "the same process");
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    assert!(
        log_lines(&log).iter().any(|l| l.starts_with("cancelled")),
        "it was told: {:?}",
        log_lines(&log)
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn the_allowlist_holds_no_secret_and_more_is_passed_by_name() {
    // The allowlist is what the official SDKs pass, plus the locale.
    for name in ["HOME", "PATH", "USER", "SHELL", "TERM", "LOGNAME"] {
        assert!(DEFAULT_INHERITED_ENV.contains(&name), "{name}");
    }
    for secret in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENTRY_API_TOKEN"] {
        assert!(!DEFAULT_INHERITED_ENV.contains(&secret), "{secret}");
    }
    // A config file names more, as `inheritEnv`; what it names is kept through the config's
    // round trip (a run's stored tool sources), and an unknown spelling is refused.
    let spec: ServerSpec =
        serde_json::from_value(json!({"command": "server", "inheritEnv": ["HTTPS_PROXY"]}))
            .unwrap();
    assert_eq!(spec, ServerSpec::stdio("server").inherit_env("HTTPS_PROXY"));
    let again: ServerSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
    assert_eq!(again, spec);
    let wrong = serde_json::from_value::<ServerSpec>(
        json!({"command": "server", "inheritEnv": "HTTPS_PROXY"}),
    );
    assert!(wrong.is_err(), "a single name, not a list, is refused");
}

#[tokio::test]
async fn a_message_past_the_limit_ends_the_server_before_it_is_held_whole() {
    let Some(spec) = common::raw(
        "a_message_past_the_limit_ends_the_server_before_it_is_held_whole",
        json!({"tools": [common::raw_tool("flood")], "answers": {"flood": {"flood": 80}}}),
    ) else {
        return;
    };
    let servers = McpServers::single("flood", spec).unwrap();
    servers.connect().await.unwrap();
    let pid = servers.pid("flood").await.unwrap();
    let error = call_once(&servers, "mcp__flood__flood").await;
    for words in ["more than 67108864 bytes", "maxResultBytes"] {
        assert!(error.contains(words), "{words:?} in {error}");
    }
    assert!(
        common::gone(pid, Duration::from_secs(6)).await,
        "process {pid} of the flooding server is still there"
    );
    servers.shutdown().await;
}
