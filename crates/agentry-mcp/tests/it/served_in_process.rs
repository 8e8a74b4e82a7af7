//! An agent with a structured output, served over MCP in this process (an in-memory pipe) and
//! called with rmcp's client: its tool has the agent's output schema, and a call answers with
//! the structured output.

use agentry::ScriptedModel;
use agentry::prelude::*;
use agentry_mcp::AgentServer;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Verdict {
    approved: bool,
    reason: String,
}

#[tokio::test]
async fn a_structured_agent_has_its_output_schema_and_answers_with_structured_content() {
    let agent = Agent::builder("reviewer")
        .description("Reviews a change.")
        .model(ScriptedModel::new().text(r#"{"approved": true, "reason": "small and tested"}"#))
        .output::<Verdict>()
        .build()
        .unwrap();
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        AgentServer::new(Runtime::new())
            .agent(agent)
            .serve((read, write))
            .await
    });
    let (read, write) = tokio::io::split(client_side);
    let client = ().serve((read, write)).await.unwrap();
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "reviewer");
    let schema = tools[0]
        .output_schema
        .as_ref()
        .expect("the agent's output schema");
    assert!(schema["properties"]["approved"].is_object(), "{schema:?}");
    let mut params = CallToolRequestParams::new("reviewer");
    params.arguments = json!({"prompt": "review #42"}).as_object().cloned();
    let result = client.peer().call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true));
    assert_eq!(
        result.structured_content,
        Some(json!({"approved": true, "reason": "small and tested"}))
    );
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}
