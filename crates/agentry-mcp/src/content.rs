//! A tool result as the model sees it: MCP content mapped to agentry's tool output.

use crate::error::McpError;
use agentry::{ToolFailure, ToolOutput};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

/// Maps a `tools/call` result to the tool's output:
/// - text blocks alone: their text, one block a line;
/// - text blocks (the fallback MCP asks servers to give) with `structuredContent`: the
///   structured content, as JSON;
/// - anything else (images, audio, embedded resources, resource links): the whole result as
///   JSON, `{"content": [...], "structuredContent": ...}`, each block as MCP gives it (image
///   data included), so nothing is lost and AfterTool hooks see all of it.
///
/// `isError: true` is a failure whose message is the result's text: the model sees it, and
/// ToolFailed hooks get it. A result larger than `cap` bytes is a failure that says so.
pub fn map_result(
    server: &str,
    tool: &str,
    result: CallToolResult,
    cap: usize,
) -> Result<ToolOutput, ToolFailure> {
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect();
    let text_only = blocks
        .iter()
        .all(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    let text = || {
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let content = if text_only {
        match &result.structured_content {
            None => text(),
            Some(structured) => structured.to_string(),
        }
    } else {
        let mut whole = json!({ "content": blocks });
        if let Some(structured) = &result.structured_content {
            whole["structuredContent"] = structured.clone();
        }
        whole.to_string()
    };
    if content.len() > cap {
        return Err(ToolFailure::new(
            McpError::TooLarge {
                server: server.to_string(),
                tool: tool.to_string(),
                size: content.len(),
                cap,
            }
            .to_string(),
        ));
    }
    if result.is_error == Some(true) {
        let message = if text_only { text() } else { content };
        return Err(ToolFailure::new(format!(
            "tool `{tool}` of MCP server `{server}` reported an error: {message}"
        )));
    }
    Ok(ToolOutput::text(content))
}
