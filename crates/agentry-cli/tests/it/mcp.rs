//! MCP through the command: a configured server's tools in a run, and agents served over stdio.

use crate::common::Project;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The path of `@modelcontextprotocol/server-everything`'s entry point, or why the test is
/// skipped (a failure under CI, which installs it).
fn everything() -> Option<String> {
    match std::env::var("AGENTRY_MCP_EVERYTHING") {
        Ok(path) if std::path::Path::new(&path).is_file() => Some(path),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "AGENTRY_MCP_EVERYTHING must name server-everything's dist/index.js under CI"
            );
            eprintln!(
                "skipped: AGENTRY_MCP_EVERYTHING is not set (server-everything's dist/index.js)"
            );
            None
        }
    }
}

#[test]
fn a_configured_mcp_server_s_tools_run_through_the_hooks() {
    let Some(server) = everything() else { return };
    let config = format!(
        r#"
[agents.helper]
model = "scripted:turns.json"
tools = []

[mcp_servers.everything]
command = "node"
args = ["{server}"]

[[hooks.events.PreToolUse]]
matcher = "mcp__everything__.*"
hooks = [{{ type = "command", command = "cat > seen.json" }}]
"#
    );
    let p = Project::new(
        &config,
        json!([
            {"tool_calls": [{"name": "mcp__everything__echo", "input": {"message": "over MCP"}}]},
            {"text": "Echoed."}
        ]),
    );
    let (lines, code) = p.json(&["run", "echo something"]);
    assert_eq!(code, 0, "{lines:?}");
    let finished = lines
        .iter()
        .find(|l| l["type"] == "tool_finished")
        .expect("the MCP call settled");
    assert_ne!(finished["result"]["is_error"], true, "{finished}");
    assert!(
        finished["result"]["content"]
            .as_str()
            .unwrap()
            .contains("over MCP"),
        "{finished}"
    );
    // The Claude Code hook saw the call under its MCP name, with its input.
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(p.file("seen.json")).unwrap())
        .expect("the hook's stdin was JSON");
    assert_eq!(seen["tool_name"], "mcp__everything__echo");
    assert_eq!(seen["tool_input"]["message"], "over MCP");
}

#[test]
fn agents_are_served_as_mcp_tools_over_stdio() {
    let p = Project::new(
        "[agents.greeter]\nmodel = \"scripted:turns.json\"\ndescription = \"Greets.\"\ntools = []\n",
        json!([{"text": "Hello there."}]),
    );
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .current_dir(p.path())
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut answer = |id: u64| -> Value {
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let init = answer(1);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let list = answer(2);
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    assert_eq!(tools[0]["name"], "greeter");
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "greeter", "arguments": {"prompt": "Hi"}}}),
    );
    let call = answer(3);
    assert!(call.to_string().contains("Hello there."), "{call}");
    child.kill().ok();
    child.wait().unwrap();
}

#[test]
fn a_server_that_cannot_start_is_a_warning_and_the_others_work() {
    let Some(server) = everything() else { return };
    let config = format!(
        r#"
[agents.helper]
model = "scripted:turns.json"
tools = []

[mcp_servers.everything]
command = "node"
args = ["{server}"]

[mcp_servers.broken]
command = "/nonexistent/mcp-server"
"#
    );
    let turns = json!([
        {"tool_calls": [{"name": "mcp__everything__echo", "input": {"message": "still here"}}]},
        {"text": "Echoed."}
    ]);
    let p = Project::new(&config, turns.clone());
    let out = p
        .agentry()
        .args(["run", "echo something"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let shown = format!("{stdout}{stderr}");
    assert!(
        shown.contains("⚠ warning: MCP server `broken` could not be started")
            && shown.contains("its tools are left out until it answers"),
        "{shown}"
    );
    assert_eq!(
        shown.matches("MCP server `broken`").count(),
        1,
        "said once: {shown}"
    );
    assert!(shown.contains("Echoed."), "{shown}");

    // The same warning is an event for programs.
    let p = Project::new(&config, turns);
    let (lines, code) = p.json(&["run", "echo something"]);
    assert_eq!(code, 0, "{lines:?}");
    let warning = lines
        .iter()
        .find(|l| l["type"] == "custom" && l["name"] == "agentry.tool_source.warning")
        .expect("a warning event");
    assert_eq!(warning["data"]["source"], "MCP servers");
    assert!(
        warning["data"]["message"]
            .as_str()
            .unwrap()
            .contains("`/nonexistent/mcp-server` could not be run"),
        "{warning}"
    );
}
