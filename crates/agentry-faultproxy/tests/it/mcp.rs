//! An MCP server over Streamable HTTP behind the fault proxy: the official "everything"
//! server's `echo` tool, called twice by a scripted model, with the first `tools/call` request
//! faulted (the proxy picks it out of the kept-alive connections by its method). What must
//! happen comes from docs/src/mcp.md and the fault table: the call in flight becomes a tool
//! error naming the server, the model gets it as the call's result, and the run goes on; the
//! next call reaches the server again.

use crate::support::everything::Everything;
use agentry::prelude::*;
use agentry::{RunOptions, ToolResult};
use agentry_faultproxy::{Fault, FaultProxy, Plan};
use agentry_mcp::{McpServers, ServerSpec};
use std::time::{Duration, Instant};

/// How one run through the proxy went.
struct Outcome {
    out: RunOutput<(), String>,
    /// The tool results the model was sent, in order.
    sent: Vec<ToolResult>,
    faults: Vec<Fault>,
    elapsed: Duration,
}

/// Runs an agent that echoes "first", then "second", then answers "done", with the server
/// behind a proxy whose first matching `tools/call` request gets `fault`.
async fn run(server: &Everything, fault: Fault, call_limit: Duration) -> Outcome {
    let plan = Plan::first([fault]).on_requests_containing(r#""method":"tools/call""#);
    let proxy = FaultProxy::start(server.addr(), plan).await.unwrap();
    let spec = ServerSpec::http(format!("{}/mcp", proxy.url())).timeout(call_limit);
    let servers = McpServers::single("everything", spec).unwrap();
    let model = ScriptedModel::new()
        .tool_call("mcp__everything__echo", json!({"message": "first"}))
        .tool_call("mcp__everything__echo", json!({"message": "second"}))
        .text("done");
    let agent = Agent::builder("assistant")
        .model(model.clone())
        .build()
        .unwrap();
    let started = Instant::now();
    let out = Runtime::new()
        .run(&agent, "echo twice")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap_or_else(|e| panic!("the run goes on past a failed MCP call: {e}"));
    let elapsed = started.elapsed();
    servers.shutdown().await;
    let sent = model
        .requests()
        .iter()
        .skip(1)
        .map(|r| {
            r.messages
                .iter()
                .rev()
                .find_map(|m| m.tool_result().cloned())
                .expect("each later request carries a tool result")
        })
        .collect();
    Outcome {
        out,
        sent,
        faults: proxy.faults(),
        elapsed,
    }
}

/// The text of a result.
fn text(result: &ToolResult) -> String {
    result.content.text().into_owned()
}

impl Outcome {
    /// The run completed with every call's result in its history, the second call echoed.
    fn went_on(&self, case: &str) -> &ToolResult {
        assert_eq!(self.out.output.as_deref(), Some("done"), "{case}");
        let results: Vec<_> = self
            .out
            .messages
            .iter()
            .filter_map(|m| m.tool_result())
            .cloned()
            .collect();
        assert_eq!(
            results, self.sent,
            "{case}: the history holds what the model saw"
        );
        assert_eq!(results.len(), 2, "{case}: {results:?}");
        assert_eq!(
            (text(&results[1]), results[1].is_error),
            ("Echo: second".to_string(), false),
            "{case}: the next call reached the server again"
        );
        &self.sent[0]
    }
}

#[tokio::test]
async fn an_mcp_server_behind_faults_turns_the_call_into_an_error_result_and_the_run_goes_on() {
    let Some(server) = Everything::start(
        "an_mcp_server_behind_faults_turns_the_call_into_an_error_result_and_the_run_goes_on",
    )
    .await
    else {
        return;
    };
    let limit = Duration::from_millis(1500);

    let healthy = run(&server, Fault::Pass, limit).await;
    let first = healthy.went_on("pass");
    assert_eq!((text(first), first.is_error), ("Echo: first".into(), false));
    assert!(healthy.faults.is_empty());

    // The call's request answered with a 500, reset, or answered with junk: the call fails
    // naming the server and the call, and the server is connected to again for the next one.
    for (fault, says) in [
        (Fault::status(500), "HTTP 500"),
        (Fault::Reset, "reset by peer"),
        (Fault::Garbage(128), "invalid HTTP"),
    ] {
        let case = fault.to_string();
        let o = run(&server, fault.clone(), limit).await;
        let first = o.went_on(&case);
        let error = text(first);
        println!("{case}: {error}");
        assert!(first.is_error, "{case}: {first:?}");
        assert!(
            error.contains("MCP server `everything` went away during `tools/call echo`")
                && error.contains(says),
            "{case}: the error names the server, the call and the cause: {error}"
        );
        assert_eq!(o.faults, [fault], "{case}");
    }

    // A server that never answers the call: the call's time limit ends it, named.
    let o = run(&server, Fault::Stall, limit).await;
    let first = o.went_on("stall");
    println!("stall: {}", text(first));
    assert!(first.is_error);
    assert!(
        text(first)
            .contains("MCP server `everything` did not answer `tools/call echo` within 1.5s"),
        "stall: {}",
        text(first)
    );
    assert!(o.elapsed >= limit, "stall: {:?}", o.elapsed);
    assert_eq!(o.faults, [Fault::Stall]);
}
