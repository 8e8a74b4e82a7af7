//! What agentry answers as an MCP client: its identity, and what it does with the server's
//! notifications (progress becomes run events, `list_changed` marks the tool list stale).

use agentry::RunContext;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The name of the run events that carry a server's progress notifications.
pub const PROGRESS_EVENT: &str = "mcp.progress";

/// A call whose progress notifications go to its run's event stream.
pub(crate) struct Watcher {
    pub(crate) run: RunContext,
    pub(crate) call_id: String,
    pub(crate) tool: String,
}

/// State a server's connections share with the code that calls it.
pub(crate) struct Shared {
    pub(crate) server: String,
    /// Set by `notifications/tools/list_changed`: the tool list is listed again before the next
    /// step.
    pub(crate) tools_stale: AtomicBool,
    /// Calls in flight that want progress, by progress token (as JSON text).
    pub(crate) progress: Mutex<HashMap<String, Watcher>>,
}

impl Shared {
    pub(crate) fn new(server: &str) -> Self {
        Shared {
            server: server.to_string(),
            tools_stale: AtomicBool::new(false),
            progress: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn watchers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Watcher>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The client side of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) shared: std::sync::Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let watchers = self.shared.watchers();
        if let Some(w) = watchers.get(&key) {
            w.run.stream_custom(PROGRESS_EVENT, || {
                json!({
                    "server": self.shared.server,
                    "tool": w.tool,
                    "call_id": w.call_id,
                    "progress": params.progress,
                    "total": params.total,
                    "message": params.message,
                })
            });
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.shared.server, "MCP tool list changed");
        self.shared.tools_stale.store(true, Ordering::Release);
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentry", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }
}
