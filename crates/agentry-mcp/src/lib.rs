//! MCP for agentry: MCP servers as tool sources, and agentry agents served as MCP servers.
//!
//! - [`McpServers`]: stdio and Streamable HTTP servers, configured as in `.mcp.json`
//!   ([`McpConfig`]), whose tools become agentry tools named `mcp__<server>__<tool>`. Every
//!   call goes through the run's tool hooks like a native tool's; the server's name and the
//!   tool's annotations are on the events ([`agentry::ToolInfo`]).
//! - [`AgentServer`]: agentry agents as the tools of an MCP server on stdio.
//!
//! Servers are data: configured as in `.mcp.json`, stored with the run's checkpoints, started
//! on first use.
//!
//! ```
//! use agentry::prelude::*;
//! use agentry::RunOptions;
//! use agentry_mcp::{McpConfig, McpServers};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = McpConfig::parse(
//!     r#"{"mcpServers": {"everything": {
//!         "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]
//!     }}}"#,
//!     "inline",
//! )?;
//! let servers = McpServers::new(config)?;
//! let options = RunOptions::new().with_stored_tools(servers);
//! assert_eq!(options.stored_hooks[0].kind, "agentry-mcp/servers");
//! // A runtime that resumes such runs (in any process) starts their servers again.
//! let _runtime = Runtime::new().restores_tools::<McpServers>();
//! # Ok(()) }
//! ```
//!
//! A run whose model calls `mcp__everything__echo` (this starts the server with `npx`):
//!
//! ```no_run
//! use agentry::prelude::*;
//! use agentry::RunOptions;
//! use agentry_mcp::{McpServers, ServerSpec};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let servers = McpServers::single(
//!     "everything",
//!     ServerSpec::stdio("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
//! )?;
//! let agent = Agent::builder("assistant")
//!     .model(ScriptedModel::new()
//!         .tool_call("mcp__everything__echo", serde_json::json!({"message": "hi"}))
//!         .text("done"))
//!     .before_tool(|ev, _ctx| async move {
//!         println!("{} from {:?}: {}", ev.name(), ev.source(), ev.input);
//!         Ok(ev)
//!     })
//!     .build()?;
//! let out = Runtime::new()
//!     .run(&agent, "Say hi").with(RunOptions::new().with_tools(servers.clone()))
//!     .await?;
//! assert_eq!(out.output.as_deref(), Some("done"));
//! servers.shutdown().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs, unreachable_pub)]

mod config;
mod content;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod process_stdio;
mod serve;
mod server;
mod servers;
mod stdio;
mod template;
mod tool;

pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_INHERITED_ENV, DEFAULT_MAX_RESULT_BYTES, DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_STARTUP_TIMEOUT, McpConfig, ServerKind, ServerSpec,
};
pub use content::map_result;
pub use error::McpError;
pub use handler::PROGRESS_EVENT;
pub use process_stdio::{StdinReader, StdoutWriter, process_stdio};
pub use serve::AgentServer;
pub use server::PROTOCOL_VERSIONS;
pub use servers::McpServers;
pub use tool::{McpTool, tool_name};
