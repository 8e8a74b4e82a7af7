//! Entry points for the fuzz targets of `crates/agentry-fuzz`: a tool of a server's
//! `tools/list` answer as the agentry tool it becomes, without a running server. Not a stable
//! API.

use crate::server::Server;
use crate::{McpTool, ServerSpec};
use std::sync::Arc;

/// The agentry tool that `tool`, listed by the server named `server`, becomes (its spec, its
/// [`ToolInfo`](agentry::ToolInfo)). The server is never started: calling the tool fails.
pub fn listed_tool(server: &str, tool: rmcp::model::Tool) -> McpTool {
    let server = Arc::new(Server::new(server.to_owned(), ServerSpec::stdio("true")));
    McpTool::new(&server, tool)
}
