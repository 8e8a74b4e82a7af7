//! Serves two agents over MCP on stdio, with a scripted model so it runs offline:
//!
//! - `greeter` calls its `shout` tool on the prompt, then answers with the result; a prompt
//!   starting with `slow` makes the tool wait for 30 s (to try cancellation from the client).
//! - `janitor` calls `delete`, a tool that needs a person's approval, so its runs pause.
//!
//! Every run executes with the runtime's hooks; here one appends how each run ended to the file
//! `AGENTRY_MCP_SERVE_LOG` names, when it is set.
//!
//! Try it with any MCP client, e.g. `npx @modelcontextprotocol/inspector cargo run -p agentry-mcp --example serve_agent`.

use agentry::prelude::*;
use agentry::{ScriptedTurn, tool};
use agentry_mcp::AgentServer;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

/// Calls `tool` on the prompt first, then answers with what the tool returned.
fn model(tool: &'static str, argument: &'static str) -> ScriptedModel {
    ScriptedModel::from_fn(move |_, request| match request.messages.last() {
        Some(last) if last.tool_result().is_some() => {
            ScriptedTurn::text(format!("Done: {}", last.text()))
        }
        last => {
            let prompt = last.map(|m| m.text().to_string()).unwrap_or_default();
            ScriptedTurn::tool_call(tool, json!({ argument: prompt }))
        }
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shout = tool("shout", "Shouts the text.", |a: Text, _ctx| async move {
        if a.text.starts_with("slow") {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Ok(a.text.to_uppercase())
    });
    let greeter = Agent::builder("greeter")
        .description("Greets whoever the prompt names, loudly.")
        .model(model("shout", "text"))
        .tool(shout)
        .build()?;
    let delete = tool("delete", "Deletes a path.", |a: Path, _ctx| async move {
        Ok(format!("deleted {}", a.path))
    })
    .needs_approval();
    let janitor = Agent::builder("janitor")
        .description("Deletes the path the prompt names.")
        .model(model("delete", "path"))
        .tool(delete)
        .build()?;
    let mut runtime = Runtime::new().store(MemoryStore::new());
    if let Ok(path) = std::env::var("AGENTRY_MCP_SERVE_LOG") {
        runtime = runtime.with(on::run_end(move |ev, ctx| {
            let line = format!("{} {}\n", ctx.agent_name(), ev.stop());
            let path = path.clone();
            async move {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                file.write_all(line.as_bytes())?;
                Ok(ev)
            }
        }));
    }
    AgentServer::new(runtime)
        .agent(greeter)
        .agent(janitor)
        .serve_stdio()
        .await?;
    Ok(())
}
