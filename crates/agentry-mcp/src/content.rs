//! A tool result as the model sees it: MCP content mapped to agentry's tool output.

use crate::error::McpError;
use agentry::content::{Media, Part};
use agentry::{Content, ToolFailure, ToolOutput};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::CallToolResult;
use serde_json::Value;

/// Maps a `tools/call` result to the tool's output:
/// - text blocks alone: their text, one block a line; with `structuredContent` (which MCP asks
///   servers to give a text fallback for), the structured content, as JSON;
/// - images and audio: image and audio parts (their bytes, their media type), in order with
///   the text; embedded resources: file parts (a `blob` as its bytes, a `text` resource as its
///   text, named after the URI); resource links: a text line naming the link. The model sees
///   them natively where the provider takes them, and AfterTool hooks can inspect, drop or
///   replace each part.
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
    let content: Content = if text_only {
        match &result.structured_content {
            None => text().into(),
            Some(structured) => structured.to_string().into(),
        }
    } else {
        let mut parts = blocks
            .iter()
            .map(|b| part_of(server, tool, b))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(structured) = &result.structured_content {
            parts.push(Part::text(structured.to_string()));
        }
        parts.into()
    };
    let size: usize = content
        .parts()
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.len(),
            other => other.media().and_then(Media::size).unwrap_or(0) as usize,
        })
        .sum();
    if size > cap {
        return Err(ToolFailure::new(
            McpError::TooLarge {
                server: server.to_string(),
                tool: tool.to_string(),
                size,
                cap,
            }
            .to_string(),
        ));
    }
    if result.is_error == Some(true) {
        let message = if text_only {
            text()
        } else {
            content.describe().into_owned()
        };
        return Err(ToolFailure::new(format!(
            "tool `{tool}` of MCP server `{server}` reported an error: {message}"
        )));
    }
    Ok(ToolOutput::parts(content))
}

/// One MCP content block as a part.
fn part_of(server: &str, tool: &str, block: &Value) -> Result<Part, ToolFailure> {
    let field = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
    let bytes = |data: Option<String>, what: &str| {
        BASE64
            .decode(data.unwrap_or_default())
            .map_err(|e| {
                ToolFailure::new(format!(
                    "tool `{tool}` of MCP server `{server}` returned {what} whose data is not base64: {e}"
                ))
            })
    };
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    Ok(match kind {
        "text" => Part::text(field(block, "text").unwrap_or_default()),
        "image" => Part::image(
            bytes(field(block, "data"), "an image")?,
            field(block, "mimeType").unwrap_or_else(|| "image/png".into()),
        ),
        "audio" => Part::audio(
            bytes(field(block, "data"), "audio")?,
            field(block, "mimeType").unwrap_or_else(|| "audio/wav".into()),
        ),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = field(resource, "uri").unwrap_or_default();
            let name = uri
                .rsplit('/')
                .find(|s| !s.is_empty())
                .unwrap_or(&uri)
                .to_owned();
            let (data, default_type) = match field(resource, "text") {
                Some(text) => (text.into_bytes(), "text/plain"),
                None => (
                    bytes(field(resource, "blob"), "a resource")?,
                    "application/octet-stream",
                ),
            };
            let media_type = field(resource, "mimeType").unwrap_or_else(|| default_type.into());
            Part::File(Media::bytes(data, media_type).named(name))
        }
        "resource_link" => {
            let uri = field(block, "uri").unwrap_or_default();
            let mut line = format!("[resource link {uri}");
            for key in ["name", "mimeType", "description"] {
                if let Some(v) = field(block, key) {
                    line.push_str(&format!(", {v}"));
                }
            }
            line.push(']');
            Part::text(line)
        }
        // A block type this version does not know: its JSON, so nothing is lost.
        _ => Part::text(block.to_string()),
    })
}
