//! A set of MCP servers as one agentry tool source.

use crate::config::{McpConfig, ServerSpec};
use crate::error::McpError;
use crate::server::Server;
use crate::tool::McpTool;
use agentry::hooks::BoxError;
use agentry::{StoredToolSource, Tool, ToolSet, ToolSource};
use futures::future::BoxFuture;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// MCP servers as a source of agentry tools named `mcp__<server>__<tool>`.
///
/// Servers start on first use and their tools are listed (every page); a server that sends
/// `notifications/tools/list_changed` is listed again before the run's next step, never during
/// one. A server that exits or crashes is restarted with backoff on its next use. Dropping the
/// last handle (or [`shutdown`](Self::shutdown)) kills every stdio server's process group.
///
/// Attach it to a run with `RunOptions::with_stored_tools` (its config is stored with the run's
/// checkpoints, so a run resumed in another process reconnects, given
/// `Runtime::restores_tools::<McpServers>()`), or give its [`tools`](Self::tools) to an agent.
#[derive(Clone)]
pub struct McpServers {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpConfig,
    servers: Vec<Arc<Server>>,
    /// Each server's last listed tools, and all of them as one set.
    listed: Mutex<Listed>,
}

#[derive(Default)]
struct Listed {
    per_server: Vec<Option<ToolSet>>,
    all: Option<ToolSet>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field(
                "servers",
                &self.inner.config.mcp_servers.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpServers {
    /// The servers of a configuration; none is started yet.
    pub fn new(config: McpConfig) -> Result<Self, McpError> {
        let mut servers = Vec::with_capacity(config.mcp_servers.len());
        for (name, spec) in &config.mcp_servers {
            spec.check(name)?;
            servers.push(Arc::new(Server::new(name.clone(), spec.clone())));
        }
        let listed = Listed {
            per_server: vec![None; servers.len()],
            all: None,
        };
        Ok(McpServers {
            inner: Arc::new(Inner {
                config,
                servers,
                listed: Mutex::new(listed),
            }),
        })
    }

    /// One server.
    pub fn single(name: impl Into<String>, spec: ServerSpec) -> Result<Self, McpError> {
        Self::new(McpConfig::default().server(name, spec))
    }

    /// The servers of a `.mcp.json` file.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Self, McpError> {
        Self::new(McpConfig::load(path)?)
    }

    /// The configuration.
    pub fn config(&self) -> &McpConfig {
        &self.inner.config
    }

    /// Starts every server and lists its tools: the first error (naming its server) is
    /// returned.
    pub async fn connect(&self) -> Result<(), McpError> {
        self.list().await.map(|_| ())
    }

    /// The tools of every server (starting those not running), after the allow and deny lists.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        Ok(self.list().await?.to_vec())
    }

    /// The process id of stdio server `name`, while it runs.
    pub async fn pid(&self, name: &str) -> Option<u32> {
        let server = self.inner.servers.iter().find(|s| s.name == name)?;
        server.pid().await
    }

    /// Stops every server (kills stdio servers' process groups); they start again on next use.
    pub async fn shutdown(&self) {
        for server in &self.inner.servers {
            server.shutdown().await;
        }
    }

    /// Lists the tools of the servers whose list is unknown or stale; a server that cannot be
    /// listed keeps its last list when it has one.
    async fn list(&self) -> Result<ToolSet, McpError> {
        for (i, server) in self.inner.servers.iter().enumerate() {
            let known = self.listed().per_server[i].is_some();
            if known && !server.shared.tools_stale.load(Ordering::Acquire) {
                continue;
            }
            match server.list_tools().await {
                Ok(tools) => {
                    let tools: ToolSet = tools
                        .into_iter()
                        .filter(|t| server.spec.offers(&t.name))
                        .map(|t| Arc::new(McpTool::new(server, t)) as Arc<dyn Tool>)
                        .collect();
                    let mut listed = self.listed();
                    listed.per_server[i] = Some(tools);
                    listed.all = None;
                }
                Err(e) if known => {
                    tracing::warn!(server = %server.name, error = %e, "MCP tools could not be listed again; the last list stays");
                }
                Err(e) => return Err(e),
            }
        }
        let mut listed = self.listed();
        if let Some(all) = &listed.all {
            return Ok(all.clone());
        }
        let all: ToolSet = listed
            .per_server
            .iter()
            .flatten()
            .flat_map(|tools| tools.iter().cloned())
            .collect();
        listed.all = Some(all.clone());
        Ok(all)
    }

    fn listed(&self) -> std::sync::MutexGuard<'_, Listed> {
        self.inner.listed.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ToolSource for McpServers {
    fn name(&self) -> &str {
        "MCP servers"
    }

    fn tools(&self) -> BoxFuture<'_, Result<ToolSet, BoxError>> {
        Box::pin(async move { self.list().await.map_err(Into::into) })
    }
}

impl StoredToolSource for McpServers {
    const KIND: &'static str = "agentry-mcp/servers";

    fn spec(&self) -> serde_json::Value {
        serde_json::to_value(&self.inner.config).unwrap_or_default()
    }

    fn from_spec(spec: &serde_json::Value) -> Result<Self, BoxError> {
        let config: McpConfig = serde_json::from_value(spec.clone())?;
        Ok(McpServers::new(config)?)
    }
}
