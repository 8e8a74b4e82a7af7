//! A `.mcp.json` file read as [`McpConfig`], and the tool source its servers make.
//!
//! Input: the file's text.

use agentry_mcp::{McpConfig, McpServers};

/// Reads `data` as an MCP configuration.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = McpConfig::parse(text, "fuzz") {
        let _ = McpServers::new(config);
    }
}
