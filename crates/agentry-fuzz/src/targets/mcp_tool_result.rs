//! What an MCP server answers, as agentry-mcp turns it into agentry's own: a `tools/call`
//! result (content blocks of every type, `structuredContent`, `isError`) mapped to the tool's
//! output, and a `tools/list` entry made the agentry tool `mcp__<server>__<tool>`, whose input
//! schema an agent compiles.
//!
//! Input: JSON, either a `CallToolResult`, or `{"tool": <a tools/list entry>, "result": <a
//! CallToolResult>}`.

use agentry::{Agent, ScriptedModel, Tool};
use agentry_mcp::fuzzing::listed_tool;
use agentry_mcp::map_result;
use rmcp::model::CallToolResult;
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

/// The largest result the target lets through, as a server's `maxResultBytes` would.
const CAP: usize = 64 * 1024;

#[derive(Deserialize)]
struct Listed {
    tool: Option<rmcp::model::Tool>,
    result: Option<CallToolResult>,
}

/// Maps what `data` describes; panics if a tool's agentry name is not `mcp__fuzz__<name>`.
pub fn run(data: &[u8]) {
    if let Ok(result) = serde_json::from_slice::<CallToolResult>(data) {
        let _ = map_result("fuzz", "echo", result, CAP);
    }
    let Ok(listed) = serde_json::from_slice::<Listed>(data) else {
        return;
    };
    let mut remote = "echo".to_owned();
    if let Some(tool) = listed.tool {
        let tool = listed_tool("fuzz", tool);
        remote = tool.remote_name().to_owned();
        assert_eq!(tool.spec().name, format!("mcp__fuzz__{remote}"));
        let _ = tool.info();
        let tool: Arc<dyn Tool> = Arc::new(tool);
        let _ = agent().def().with_source_tools([&tool]);
    }
    if let Some(result) = listed.result {
        let _ = map_result("fuzz", &remote, result, CAP);
    }
}

fn agent() -> &'static Agent {
    static AGENT: OnceLock<Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        Agent::builder("fuzz")
            .model(ScriptedModel::new())
            .build()
            .expect("the agent")
    })
}
