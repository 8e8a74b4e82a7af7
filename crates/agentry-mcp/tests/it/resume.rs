//! MCP servers are data stored with a run's checkpoints: a run killed mid-call and resumed in
//! another process reconnects to the same servers.
//!
//! `child_starts_the_run` is not a test of its own: it is the process that gets killed, started
//! by the tests here with `AGENTRY_MCP_TEST_CHILD` set.

use crate::common;

use agentry::RunOptions;
use agentry::ScriptedModel;
use agentry::prelude::*;
use agentry_mcp::McpServers;
use agentry_store::SqliteStore;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHILD: &str = "AGENTRY_MCP_TEST_CHILD";

/// What AfterTool hooks saw: the result, the tool's source.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn servers(dir: &Path) -> Option<McpServers> {
    let spec = common::faults("a_run_killed_mid_call_resumes_in_a_new_process_and_reconnects")?
        .env("FAULTS_LOG", dir.join("faults.log").display().to_string())
        .tool_timeout("hang", Duration::from_secs(3));
    Some(McpServers::single("faults", spec).unwrap())
}

/// The other process: starts run `r-1` with the servers stored on it; its second call hangs
/// until the test kills this process.
#[tokio::test]
async fn child_starts_the_run() {
    let Ok(dir) = std::env::var(CHILD) else {
        return;
    };
    let dir = Path::new(&dir);
    let servers = servers(dir).expect("the parent checked the server is there");
    let store = SqliteStore::open(dir.join("runs.db")).await.unwrap();
    let model = ScriptedModel::new()
        .tool_call("mcp__faults__echo", json!({"text": "one"}))
        .tool_call("mcp__faults__hang", json!({}))
        .text("never");
    let agent = Agent::builder("assistant").model(model).build().unwrap();
    let _ = Runtime::new()
        .store(store)
        .lease_ttl(Duration::from_secs(1))
        .run(&agent, "go")
        .with(RunOptions::new().run_id("r-1").with_stored_tools(servers))
        .await;
    panic!("the run should have been killed while its call hung");
}

/// Starts the run in another process and kills it while its second call hangs.
fn start_and_kill_in_another_process(dir: &Path) {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "resume::child_starts_the_run",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = std::fs::read_to_string(dir.join("faults.log")).unwrap_or_default();
        if log.contains("hang started") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the other process never reached the hanging call"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the other process ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first step's checkpoint is written by now; kill the process mid-call.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn a_run_killed_mid_call_resumes_in_a_new_process_and_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    if servers(dir.path()).is_none() {
        return;
    }
    start_and_kill_in_another_process(dir.path());
    // Its lease (1 s) runs out.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let seen: Seen = Arc::default();
    let log = seen.clone();
    let model = ScriptedModel::new()
        .tool_call("mcp__faults__echo", json!({"text": "after resume"}))
        .text("done");
    let agent = Agent::builder("assistant")
        .model(model)
        .after_tool(move |ev, _ctx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push((
                    ev.content.text().into_owned(),
                    ev.source().map(str::to_string),
                ));
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();

    // A runtime that was not told how to build MCP servers again says so.
    let e = Runtime::new()
        .store(store.clone())
        .resume(&agent, "r-1")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("agentry-mcp/servers"), "{e}");
    assert!(e.contains("restores_tools"), "{e}");

    // No server configured here: the run brings its own, and the server starts again here.
    let out = Runtime::new()
        .store(store)
        .restores_tools::<McpServers>()
        .resume(&agent, "r-1")
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [(
            r#"{"result":"after resume"}"#.to_string(),
            Some("faults".to_string())
        )]
    );
    assert!(
        out.messages
            .iter()
            .any(|m| m.tool_result_text().as_deref() == Some(r#"{"result":"one"}"#)),
        "the first call's result came from the killed process's checkpoint"
    );
}
