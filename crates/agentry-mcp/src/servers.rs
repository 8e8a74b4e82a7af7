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
/// Servers start on first use (all at once) and their tools are listed (every page); a server
/// that sends `notifications/tools/list_changed` is listed again before the run's next step,
/// never during one. A server that exits or crashes is restarted with backoff on its next use.
/// [`shutdown`](Self::shutdown) closes each stdio server's stdin and gives it its grace period
/// before ending its process group; dropping the last handle kills them at once.
///
/// One server that cannot be started or listed does not sink a run: as a tool source, its tools
/// are left out, a warning (`tracing`, and [`unavailable`](Self::unavailable)) says why, and
/// it is tried again in the background (with backoff, never holding up a step); its tools are
/// offered from the step after it answers. A server marked
/// [`required`](ServerSpec::required) fails the run instead.
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

struct Listed {
    per_server: Vec<Option<ToolSet>>,
    all: Option<ToolSet>,
    /// Per server: why its last start or listing failed, while it has no list.
    failed: Vec<Option<String>>,
    /// Per server: a retry runs in the background.
    retrying: Vec<bool>,
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
            failed: vec![None; servers.len()],
            retrying: vec![false; servers.len()],
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
        self.list(true).await.map(|_| ())
    }

    /// The tools of every server (starting those not running), after the allow and deny
    /// lists; the first server that cannot be started or listed is an error.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        Ok(self.list(true).await?.to_vec())
    }

    /// The servers whose tools are left out now, each with why (the error of its last start or
    /// listing); empty when every server is available.
    pub fn unavailable(&self) -> Vec<(String, String)> {
        let listed = self.listed();
        self.inner
            .servers
            .iter()
            .zip(&listed.failed)
            .filter_map(|(server, why)| Some((server.name.clone(), why.clone()?)))
            .collect()
    }

    /// The process id of stdio server `name`, while it runs.
    pub async fn pid(&self, name: &str) -> Option<u32> {
        let server = self.inner.servers.iter().find(|s| s.name == name)?;
        server.pid().await
    }

    /// Stops every server (at once, each given its grace period); they start again on next
    /// use.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.inner.servers.iter().map(|s| s.shutdown())).await;
    }

    /// Lists the tools of the servers whose list is unknown or stale, all at once; a server
    /// that cannot be listed keeps its last list when it has one. `strict`: the first error of
    /// a server without a list is returned; otherwise only a required server's is, and the
    /// others are left out and retried in the background.
    async fn list(&self, strict: bool) -> Result<ToolSet, McpError> {
        let mut now = Vec::new();
        for (i, server) in self.inner.servers.iter().enumerate() {
            let (known, failed, retrying) = {
                let listed = self.listed();
                (
                    listed.per_server[i].is_some(),
                    listed.failed[i].is_some(),
                    listed.retrying[i],
                )
            };
            if known && !server.shared.tools_stale.load(Ordering::Acquire) {
                continue;
            }
            if known || strict || server.spec.required || !failed {
                now.push(async move { (i, server.list_tools().await) });
            } else if !retrying {
                self.retry(i);
            }
        }
        for (i, result) in futures::future::join_all(now).await {
            let server = &self.inner.servers[i];
            match result {
                Ok(tools) => self.listed_now(i, tools),
                Err(e) if self.listed().per_server[i].is_some() => {
                    tracing::warn!(server = %server.name, error = %e, "MCP tools could not be listed again; the last list stays");
                }
                Err(e) if strict || server.spec.required => {
                    self.listed().failed[i] = Some(e.to_string());
                    return Err(e);
                }
                Err(e) => {
                    self.left_out(i, &e);
                    if !self.listed().retrying[i] {
                        self.retry(i);
                    }
                }
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

    /// Keeps server `i`'s list (after the allow and deny lists).
    fn listed_now(&self, i: usize, tools: Vec<rmcp::model::Tool>) {
        let server = &self.inner.servers[i];
        let tools: ToolSet = tools
            .into_iter()
            .filter(|t| server.spec.offers(&t.name))
            .map(|t| Arc::new(McpTool::new(server, t)) as Arc<dyn Tool>)
            .collect();
        let mut listed = self.listed();
        if listed.failed[i].take().is_some() {
            tracing::info!(server = %server.name, "MCP server is available again; its tools are offered from the next step");
        }
        listed.per_server[i] = Some(tools);
        listed.all = None;
    }

    /// Leaves server `i`'s tools out, saying why the first time.
    fn left_out(&self, i: usize, error: &McpError) {
        let server = &self.inner.servers[i];
        let mut listed = self.listed();
        if listed.failed[i].is_none() {
            tracing::warn!(server = %server.name, %error, "MCP server unavailable: its tools are left out, and it is tried again before later steps (mark it `required` to fail the run instead)");
        } else {
            tracing::debug!(server = %server.name, %error, "MCP server still unavailable");
        }
        listed.failed[i] = Some(error.to_string());
    }

    /// Tries server `i` again in the background, after its backoff: its tools are offered from
    /// the step after it answers. A retry that fails is not repeated until a later listing (the
    /// next step of a run) asks again.
    fn retry(&self, i: usize) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.listed().retrying[i] = true;
        let server = self.inner.servers[i].clone();
        let inner = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            let result = server.list_tools().await;
            let Some(inner) = inner.upgrade() else { return };
            let servers = McpServers { inner };
            servers.listed().retrying[i] = false;
            match result {
                Ok(tools) => servers.listed_now(i, tools),
                Err(e) => servers.left_out(i, &e),
            }
        });
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
        Box::pin(async move { self.list(false).await.map_err(Into::into) })
    }

    fn warnings(&self) -> Vec<String> {
        self.unavailable()
            .into_iter()
            .map(|(_, why)| {
                format!("{why}; its tools are left out until it answers (it is tried again before later steps)")
            })
            .collect()
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
