//! W6: one echo tool called through an MCP stdio server, against the same tool native: the
//! latency each call adds, p50 and p99.

use agentry::{RunContext, RunContextSpec, Tool, ToolCtx, tool};
use agentry_mcp::{McpServers, ServerSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// The MCP server W6 starts (this binary with `--serve-mcp-echo`): one tool, `echo`.
struct EchoServer;

impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let tool = rmcp::model::Tool::new(
            "echo",
            "Returns its text.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        );
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Serves the echo tool on stdin and stdout until the client goes away.
pub(crate) async fn serve_echo() {
    let running = EchoServer
        .serve(agentry_mcp::process_stdio())
        .await
        .expect("the client initializes");
    let _ = running.waiting().await;
}

fn context() -> ToolCtx {
    let run = RunContext::detached(RunContextSpec::new("w6", "w6"));
    ToolCtx::new(run, Arc::from("call_1"), Arc::from("echo"))
}

/// The latency of `calls` calls of `tool` (after unmeasured warm-up calls), sorted.
async fn latencies(tool: &dyn Tool, calls: u32) -> Vec<Duration> {
    let ctx = context();
    let input = json!({"text": "hello"});
    let warmup = (calls / 10).clamp(1, 500);
    for _ in 0..warmup {
        tool.call(input.clone(), ctx.clone())
            .await
            .expect("echo answers");
    }
    let mut times = Vec::with_capacity(calls as usize);
    for _ in 0..calls {
        let arg = input.clone();
        let t0 = Instant::now();
        let out = tool.call(arg, ctx.clone()).await.expect("echo answers");
        times.push(t0.elapsed());
        assert_eq!(out.content, "hello");
    }
    times.sort();
    times
}

/// The floor any stdio server sits on: a 100-byte round trip through `cat` over two pipes,
/// with blocking reads and writes (no JSON-RPC, no async runtime), sorted.
fn pipe_floor(calls: u32) -> Vec<Duration> {
    use std::io::{Read, Write};
    let mut cat = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cat runs");
    let mut to = cat.stdin.take().expect("piped");
    let mut from = cat.stdout.take().expect("piped");
    let message = [b'x'; 100];
    let mut echoed = [0u8; 100];
    let mut times = Vec::with_capacity(calls as usize);
    for i in 0..calls + calls / 10 {
        let t0 = Instant::now();
        to.write_all(&message).expect("cat reads");
        from.read_exact(&mut echoed).expect("cat echoes");
        if i >= calls / 10 {
            times.push(t0.elapsed());
        }
    }
    drop(to);
    let _ = cat.wait();
    times.sort();
    times
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Calls the echo tool `calls` times natively and `calls` times through the MCP server.
pub(crate) async fn run(calls: u32, current_thread: bool) -> Value {
    let native = tool("echo", "Returns its text.", |a: Text, _ctx| async move {
        Ok(a.text)
    });
    let exe = std::env::current_exe().expect("this binary's path");
    let spec = match std::env::var("AGENTRY_W6_SERVER") {
        // Another MCP server with an `echo` tool (in another language), to compare: a command
        // and its arguments, split at spaces.
        Ok(command) => {
            let mut words = command.split_whitespace();
            let program = words.next().unwrap_or_default().to_string();
            ServerSpec::stdio(program).args(words.map(str::to_string))
        }
        Err(_) => ServerSpec::stdio(exe.display().to_string()).args([
            "--workload",
            "w6",
            "--serve-mcp-echo",
        ]),
    };
    let servers = McpServers::single("bench", spec).expect("a valid spec");
    let tools = servers.tools().await.expect("the echo server starts");
    let mcp = tools
        .iter()
        .find(|t| t.spec().name == "mcp__bench__echo")
        .expect("the server offers echo");
    let native_times = latencies(&native, calls).await;
    let mcp_times = latencies(mcp.as_ref(), calls).await;
    servers.shutdown().await;
    let floor = pipe_floor(calls);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let p = |times: &[Duration], q: f64| us(percentile(times, q));
    json!({
        "framework": "agentry",
        "workload": "w6",
        "runtime": if current_thread { "current_thread" } else { "multi_thread" },
        "transport": "stdio",
        "calls": calls,
        "native_p50_us": p(&native_times, 0.50),
        "native_p99_us": p(&native_times, 0.99),
        "mcp_p50_us": p(&mcp_times, 0.50),
        "mcp_p99_us": p(&mcp_times, 0.99),
        "added_p50_us": p(&mcp_times, 0.50) - p(&native_times, 0.50),
        "added_p99_us": p(&mcp_times, 0.99) - p(&native_times, 0.99),
        "pipe_floor_p50_us": p(&floor, 0.50),
        "pipe_floor_p99_us": p(&floor, 0.99),
    })
}
