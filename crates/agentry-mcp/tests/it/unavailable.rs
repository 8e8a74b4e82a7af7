//! One server that cannot be started, or answers garbage, does not sink a run: its tools are
//! left out with a reason, the other servers work, and it is tried again before later steps; a
//! server marked `required` fails the run instead.

use crate::common;

use agentry::ScriptedModel;
use agentry::prelude::*;
use agentry_mcp::{McpConfig, McpServers, ServerSpec};
use serde_json::json;
use std::time::Duration;

fn tool_names(request: &agentry::ModelRequest) -> Vec<String> {
    let mut names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_server_that_cannot_start_or_answers_garbage_leaves_the_others_working() {
    let test = "a_server_that_cannot_start_or_answers_garbage_leaves_the_others_working";
    let (Some(good), Some(garbage)) = (
        common::raw(test, json!({"tools": [common::raw_tool("echo")]})),
        common::raw(test, json!({"init": "garbage"})),
    ) else {
        return;
    };
    let config = McpConfig::default()
        .server("good", good)
        .server("garbage", garbage)
        .server(
            "missing",
            ServerSpec::stdio("/nonexistent/agentry-mcp-server"),
        );
    let servers = McpServers::new(config).unwrap();
    let model = ScriptedModel::new()
        .record_requests(true)
        .tool_call("mcp__good__echo", json!({"text": "hi"}))
        .text("done");
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .build()
        .unwrap();
    let out = common::run_on(&agent, &servers).await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let requests = model.requests();
    assert_eq!(tool_names(&requests[0]), ["mcp__good__echo"]);
    assert_eq!(tool_names(&requests[1]), ["mcp__good__echo"]);

    let unavailable = servers.unavailable();
    let names: Vec<&str> = unavailable.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["garbage", "missing"]);
    let why = |name: &str| {
        unavailable
            .iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
            .clone()
    };
    assert!(
        why("garbage").contains("MCP server `garbage` failed to initialize")
            && why("garbage").contains("this is not JSON-RPC"),
        "{}",
        why("garbage")
    );
    assert!(
        why("missing").contains("MCP server `missing` could not be started"),
        "{}",
        why("missing")
    );
    for (_, why) in &unavailable {
        common::no_rust_words(why);
    }
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_comes_up_later_is_offered_from_a_later_step() {
    let test = "a_server_that_comes_up_later_is_offered_from_a_later_step";
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("tried");
    let (Some(slow), Some(late)) = (
        common::raw(
            test,
            json!({"tools": [common::raw_tool("wait")], "answers": {"wait": {"block": 1.5}}}),
        ),
        common::raw(
            test,
            json!({"tools": [common::raw_tool("echo")], "init": {"fail_first": marker}}),
        ),
    ) else {
        return;
    };
    let servers = McpServers::new(
        McpConfig::default()
            .server("slow", slow)
            .server("late", late),
    )
    .unwrap();
    let model = ScriptedModel::new()
        .record_requests(true)
        .tool_call("mcp__slow__wait", json!({}))
        .tool_call("mcp__late__echo", json!({"text": "here now"}))
        .text("done");
    let results: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let log = results.clone();
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .after_tool(move |ev, _ctx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(ev.content.text().into_owned());
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let out = common::run_on(&agent, &servers).await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let requests = model.requests();
    assert_eq!(
        tool_names(&requests[0]),
        ["mcp__slow__wait"],
        "left out while it failed"
    );
    assert_eq!(
        tool_names(&requests[1]),
        ["mcp__late__echo", "mcp__slow__wait"],
        "offered once the retry in the background answered"
    );
    assert_eq!(
        results.lock().unwrap()[1],
        r#"{"text": "here now"}"#,
        "and its tool works"
    );
    assert!(servers.unavailable().is_empty());
    servers.shutdown().await;
}

#[tokio::test]
async fn a_required_server_that_cannot_start_fails_the_run_naming_it() {
    let test = "a_required_server_that_cannot_start_fails_the_run_naming_it";
    let Some(broken) = common::raw(
        test,
        json!({"init": {"exit": 2, "stderr": "no config file here"}}),
    ) else {
        return;
    };
    let servers = McpServers::single("needed", broken.required(true)).unwrap();
    let agent = Agent::builder("assistant")
        .model(ScriptedModel::new().text("never"))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let e = common::run_on(&agent, &servers)
        .await
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        e.contains("MCP server `needed` failed to initialize"),
        "{e}"
    );
    // How it ended comes before what it wrote.
    let status = e.find("it exited with status 2 before answering `initialize`");
    let stderr = e.find("no config file here");
    assert!(
        status.is_some() && stderr.is_some() && status < stderr,
        "{e}"
    );
    common::no_rust_words(&e);
}
