//! `agentry mcp serve`.

use super::{Failure, failed, open};
use crate::cli::Cli;
use crate::exit::Exit;
use agentry_mcp::AgentServer;

/// Serves the configured agents (or those named) as MCP tools on stdio until the client
/// disconnects. Progress and errors go to stderr: stdout is the protocol's.
pub(super) async fn serve(cli: &Cli, names: &[String]) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let mut server = AgentServer::new(project.runtime.clone());
    let chosen: Vec<&String> = if names.is_empty() {
        project.agents.keys().collect()
    } else {
        names.iter().collect()
    };
    for name in chosen {
        let agent = project.agent(Some(name)).map_err(|e| (Exit::Usage, e))?;
        server = server.agent(agent.clone());
    }
    server
        .serve_stdio()
        .await
        .map_err(|e| failed(format!("the MCP server stopped: {e}")))?;
    Ok(Exit::Ok)
}
