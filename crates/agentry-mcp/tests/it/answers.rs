//! What a server says is kept: its `outputSchema` is on the tool's info and its structured
//! results are checked against it; a JSON-RPC error reaches the model and the hooks with its
//! code and message; a server that dies mid-call is reported with its exit status or signal
//! before its stderr tail; no error carries Rust's own words.

use crate::common;

use agentry::ScriptedModel;
use agentry::prelude::*;
use agentry_mcp::McpServers;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// What AfterTool hooks saw of each successful call, what ToolFailed hooks saw, the output
/// schema on each call's info, and the text of every message the model was last sent.
#[derive(Default)]
struct Seen {
    results: Mutex<Vec<(String, bool)>>,
    failures: Mutex<Vec<String>>,
    schemas: Mutex<Vec<Option<Value>>>,
    sent: Mutex<String>,
}

async fn run(servers: &McpServers, calls: &[(&str, Value)]) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let mut model = ScriptedModel::new().record_requests(true);
    for (tool, args) in calls {
        model = model.tool_call(*tool, args.clone());
    }
    let (a, b, c) = (seen.clone(), seen.clone(), seen.clone());
    let model = model.text("done");
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .before_tool(move |ev, _ctx| {
            let seen = a.clone();
            async move {
                let schema = ev.tool_info().and_then(|i| i.output_schema.clone());
                seen.schemas.lock().unwrap().push(schema);
                Ok(ev)
            }
        })
        .after_tool(move |ev, _ctx| {
            let seen = b.clone();
            async move {
                let text = ev.content.text().into_owned();
                seen.results.lock().unwrap().push((text, ev.is_error));
                Ok(ev)
            }
        })
        .tool_failed(move |ev, _ctx| {
            let seen = c.clone();
            async move {
                seen.failures.lock().unwrap().push(ev.error().to_string());
                Ok(ev)
            }
        })
        .build()
        .unwrap();
    let out = common::run_on(&agent, servers).await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let last = model.requests().pop().unwrap();
    *seen.sent.lock().unwrap() = last
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    seen
}

#[tokio::test]
async fn the_output_schema_is_on_the_tool_and_structured_results_are_checked() {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    });
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}, "outputSchema": schema});
    let result = |structured: Option<Value>| {
        let mut r = json!({"content": [{"type": "text", "text": "see structured"}]});
        if let Some(s) = structured {
            r["structuredContent"] = s;
        }
        json!({"result": r})
    };
    let Some(spec) = common::raw(
        "the_output_schema_is_on_the_tool_and_structured_results_are_checked",
        json!({
            "tools": [tool("good"), tool("bad"), tool("missing")],
            "answers": {
                "good": result(Some(json!({"n": 1}))),
                "bad": result(Some(json!({"n": "one"}))),
                "missing": result(None),
            }
        }),
    ) else {
        return;
    };
    let servers = McpServers::single("typed", spec).unwrap();
    let seen = run(
        &servers,
        &[
            ("mcp__typed__good", json!({})),
            ("mcp__typed__bad", json!({})),
            ("mcp__typed__missing", json!({})),
        ],
    )
    .await;
    let schemas = seen.schemas.lock().unwrap().clone();
    assert_eq!(
        schemas,
        vec![Some(schema.clone()); 3],
        "on every call's info"
    );
    let results = seen.results.lock().unwrap().clone();
    assert_eq!(results[0], (r#"{"n":1}"#.to_string(), false));
    let failures = seen.failures.lock().unwrap().clone();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].contains(
            "tool `bad` of MCP server `typed` returned structuredContent that does not match its outputSchema"
        ) && failures[0].contains("/n"),
        "{}",
        failures[0]
    );
    assert!(
        failures[1].contains(
            "tool `missing` of MCP server `typed` declares an outputSchema but returned no structuredContent"
        ),
        "{}",
        failures[1]
    );
    let sent = seen.sent.lock().unwrap().clone();
    for failure in &failures {
        assert!(sent.contains(failure.as_str()), "the model sees it: {sent}");
    }
    servers.shutdown().await;
}

#[tokio::test]
async fn a_json_rpc_error_reaches_the_model_and_hooks_with_its_code_and_message() {
    let Some(spec) = common::raw(
        "a_json_rpc_error_reaches_the_model_and_hooks_with_its_code_and_message",
        json!({
            "tools": [common::raw_tool("lookup"), common::raw_tool("odd")],
            "answers": {
                "lookup": {"error": {"code": -32602, "message": "unknown city `Atlantis`",
                                     "data": {"known": ["Paris", "Lima"]}}},
                "odd": {"error": {"code": 4711, "message": "quota spent"}},
            }
        }),
    ) else {
        return;
    };
    let servers = McpServers::single("geo", spec).unwrap();
    let seen = run(
        &servers,
        &[
            ("mcp__geo__lookup", json!({"city": "Atlantis"})),
            ("mcp__geo__odd", json!({})),
        ],
    )
    .await;
    let failures = seen.failures.lock().unwrap().clone();
    assert_eq!(
        failures[0],
        r#"MCP server `geo` answered `tools/call lookup` with error -32602 (invalid params): unknown city `Atlantis` (data: {"known":["Paris","Lima"]})"#
    );
    assert_eq!(
        failures[1],
        "MCP server `geo` answered `tools/call odd` with error 4711: quota spent"
    );
    let sent = seen.sent.lock().unwrap().clone();
    assert!(sent.contains(&failures[0]), "the model sees it: {sent}");
    assert!(sent.contains(&failures[1]), "the model sees it: {sent}");
    servers.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_reported_with_its_exit_status_or_signal() {
    let Some(spec) = common::raw(
        "a_server_that_dies_mid_call_is_reported_with_its_exit_status_or_signal",
        json!({
            "tools": [common::raw_tool("quit"), common::raw_tool("segv"), common::raw_tool("echo")],
            "answers": {
                "quit": {"exit": 7, "stderr": "out of memory, giving up"},
                "segv": {"signal": 11},
            }
        }),
    ) else {
        return;
    };
    let servers = McpServers::single("fragile", spec).unwrap();
    let seen = run(
        &servers,
        &[
            ("mcp__fragile__quit", json!({})),
            ("mcp__fragile__segv", json!({})),
            ("mcp__fragile__echo", json!({"still": "here"})),
        ],
    )
    .await;
    let failures = seen.failures.lock().unwrap().clone();
    assert_eq!(failures.len(), 2, "{failures:?}");
    let quit = &failures[0];
    assert!(
        quit.starts_with(
            "MCP server `fragile` went away during `tools/call quit` (it exited with status 7); it is started again when next used"
        ),
        "{quit}"
    );
    let status = quit.find("status 7").unwrap();
    let stderr = quit.find("out of memory, giving up").expect(quit);
    assert!(status < stderr, "the status before the stderr tail: {quit}");
    assert!(
        failures[1].contains("(it was killed by signal 11 (SIGSEGV))"),
        "{}",
        failures[1]
    );
    for failure in &failures {
        common::no_rust_words(failure);
    }
    let results = seen.results.lock().unwrap().clone();
    assert_eq!(
        results[0],
        (r#"{"still": "here"}"#.to_string(), false),
        "started again"
    );
    servers.shutdown().await;
}
