//! One MCP server: its connection (started on first use, restarted with backoff after it went
//! away), its tool list, and its calls with time limits, cancellation and progress.

use crate::config::ServerSpec;
use crate::error::McpError;
use crate::handler::{Handler, Shared, Watcher};
use crate::stdio::{Diagnostics, ProcessGroup};
use crate::template::resolve;
use agentry::ToolCtx;
use agentry::awake::{LOCAL_ANSWER, awake_for};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientNotification, ClientRequest, ProtocolVersion, RequestId,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The protocol versions this client speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The first wait before restarting a server that went away; it doubles per failure.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long a server whose call was cancelled or timed out has to answer a ping before it
/// counts as hung, and its process is ended.
pub(crate) const HUNG_AFTER: Duration = Duration::from_secs(2);
/// How long the exit of a server whose connection closed is waited for, to report its status.
const EXIT_WAIT: Duration = Duration::from_millis(300);

/// A live connection to a server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    diagnostics: Arc<Diagnostics>,
    group: Option<Arc<ProcessGroup>>,
    /// Set when its server was found hung and its process ended.
    ended: AtomicBool,
}

impl Connection {
    fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// True while it can carry requests.
    fn is_live(&self) -> bool {
        !self.ended.load(Ordering::Acquire) && !self.service.is_closed()
    }

    /// Ends a hung server's process; the next use starts it again.
    fn end_hung(&self) {
        self.ended.store(true, Ordering::Release);
        if let Some(group) = &self.group {
            group.kill();
        }
    }

    /// The child's process id (stdio servers).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.group.as_ref().and_then(|g| g.pid())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(group) = &self.group {
            group.kill();
        }
    }
}

#[derive(Default)]
struct State {
    conn: Option<Arc<Connection>>,
    /// Failures since the last call that succeeded.
    failures: u32,
    /// No restart before this.
    not_before: Option<Instant>,
}

/// One configured server.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) spec: ServerSpec,
    pub(crate) shared: Arc<Shared>,
    state: tokio::sync::Mutex<State>,
}

impl Server {
    pub(crate) fn new(name: String, spec: ServerSpec) -> Self {
        Server {
            shared: Arc::new(Shared::new(&name)),
            name,
            spec,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// The live connection, started (after the backoff, when the last one went away) if there
    /// is none.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut state = self.state.lock().await;
        if let Some(conn) = &state.conn {
            if conn.is_live() {
                return Ok(conn.clone());
            }
            state.conn = None;
        }
        if let Some(at) = state.not_before {
            tokio::time::sleep_until(at.into()).await;
        }
        match tokio::time::timeout(self.spec.startup_timeout(), self.connect()).await {
            Ok(Ok(conn)) => {
                let conn = Arc::new(conn);
                state.conn = Some(conn.clone());
                // Listed again on the new connection.
                self.shared.tools_stale.store(true, Ordering::Release);
                Ok(conn)
            }
            Ok(Err(e)) => {
                Self::failed(&mut state);
                Err(e)
            }
            Err(_) => {
                Self::failed(&mut state);
                Err(McpError::Start {
                    server: self.name.clone(),
                    message: format!(
                        "it did not start and answer `initialize` within {:?}; raise its `startupTimeoutMs` if it is slow to start",
                        self.spec.startup_timeout()
                    ),
                    stderr: String::new(),
                })
            }
        }
    }

    fn failed(state: &mut State) {
        state.failures += 1;
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << state.failures.saturating_sub(1).min(16))
            .min(MAX_BACKOFF);
        state.not_before = Some(Instant::now() + backoff);
    }

    /// Forgets a connection that went away, so the next use restarts the server after the
    /// backoff.
    async fn went_away(&self, conn: &Arc<Connection>) {
        let mut state = self.state.lock().await;
        if state.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            state.conn = None;
            Self::failed(&mut state);
        }
    }

    async fn succeeded(&self) {
        let mut state = self.state.lock().await;
        state.failures = 0;
        state.not_before = None;
    }

    /// Stops the server: a stdio server's stdin is closed and it is given its grace period to
    /// exit, then SIGTERM and the grace period again, then its process group is killed.
    pub(crate) async fn shutdown(&self) {
        let conn = self.state.lock().await.conn.take();
        if let Some(conn) = conn {
            if let Some(group) = &conn.group {
                group.shutdown(self.spec.shutdown_grace_period()).await;
            }
            drop(conn);
        }
    }

    /// The process id of the running stdio server, if one runs.
    pub(crate) async fn pid(&self) -> Option<u32> {
        self.state.lock().await.conn.as_ref().and_then(|c| c.pid())
    }

    async fn connect(&self) -> Result<Connection, McpError> {
        let diagnostics = Arc::new(Diagnostics::default());
        let handler = Handler {
            shared: self.shared.clone(),
        };
        let init_error = |message: String, diagnostics: &Diagnostics| McpError::Initialize {
            server: self.name.clone(),
            message: diagnostics.fault().unwrap_or(message),
            stderr: diagnostics.stderr_tail(),
        };
        let (service, group) = if self.spec.is_http() {
            let transport = self.http_transport()?;
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| init_error(init_failure(&e), &diagnostics))?;
            (service, None)
        } else {
            let (transport, group) = crate::stdio::spawn(&self.name, &self.spec, &diagnostics)?;
            match handler.serve(transport).await {
                Ok(service) => (service, Some(group)),
                Err(e) => {
                    // How it ended, and the stderr of a server that exits at once, say why.
                    let mut message = init_failure(&e);
                    if let Some(ended) = group.how_it_ended(EXIT_WAIT).await {
                        message = format!("{ended} before answering `initialize`");
                        diagnostics.stderr_settled(EXIT_WAIT).await;
                    }
                    group.kill();
                    return Err(init_error(message, &diagnostics));
                }
            }
        };
        let conn = Connection {
            service,
            diagnostics,
            group,
            ended: AtomicBool::new(false),
        };
        let version = conn
            .service
            .peer_info()
            .map(|i| i.protocol_version.clone())
            .unwrap_or_else(|| ProtocolVersion::LATEST_WITH_INITIALIZE);
        if !PROTOCOL_VERSIONS.contains(&version.as_str()) {
            return Err(McpError::Initialize {
                server: self.name.clone(),
                message: format!(
                    "it answered with protocol version `{}`, which this client does not speak (it speaks {}); use a server version that supports one of them",
                    version.as_str(),
                    PROTOCOL_VERSIONS.join(", ")
                ),
                stderr: conn.diagnostics.stderr_tail(),
            });
        }
        Ok(conn)
    }

    fn http_transport(
        &self,
    ) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, McpError> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let bad = |message: String| McpError::Spec {
            server: self.name.clone(),
            message,
        };
        let url = resolve(
            self.spec.url.as_deref().unwrap_or_default(),
            &self.name,
            "url",
        )?;
        let mut headers = std::collections::HashMap::new();
        for (name, template) in &self.spec.headers {
            let value = resolve(template, &self.name, &format!("header {name}"))?;
            let header = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| bad(format!("header name `{name}` is not valid: {e}")))?;
            // The value is a secret: the error names the header, not the value.
            let mut value = http::HeaderValue::from_str(&value).map_err(|_| {
                bad(format!(
                    "the value of header `{name}` is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        Ok(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
    }

    /// Lists the server's tools (every page), as the server gives them.
    pub(crate) async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let conn = self.connection().await?;
        self.shared.tools_stale.store(false, Ordering::Release);
        let limit = self.spec.call_timeout("");
        match tokio::time::timeout(limit, conn.peer().list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => {
                self.shared.tools_stale.store(true, Ordering::Release);
                Err(self.service_error(&conn, "tools/list", e).await)
            }
            Err(_) => {
                self.shared.tools_stale.store(true, Ordering::Release);
                Err(McpError::Timeout {
                    server: self.name.clone(),
                    what: "tools/list".into(),
                    limit,
                })
            }
        }
    }

    /// Calls tool `tool` (the server's name for it) within `limit`. Dropping the future (a
    /// cancelled run, the runtime's own time limit) sends `notifications/cancelled`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        ctx: &ToolCtx,
        limit: Duration,
    ) -> Result<CallToolResult, McpError> {
        let conn = self.connection().await?;
        let what = format!("tools/call {tool}");
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match conn
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.service_error(&conn, &what, e).await),
        };
        let mut guard = InFlight {
            conn: conn.clone(),
            id: Some(handle.id.clone()),
            shared: self.shared.clone(),
            token: None,
        };
        if ctx.run().has_event_stream() {
            let token = serde_json::to_string(&handle.progress_token).unwrap_or_default();
            self.shared.watchers().insert(
                token.clone(),
                Watcher {
                    run: ctx.run().clone(),
                    call_id: ctx.call_id().to_string(),
                    tool: ctx.tool_name().to_string(),
                },
            );
            guard.token = Some(token);
        }
        // The answer of a server on stdio comes within microseconds: waited for awake first.
        // One over HTTP takes longer than waiting awake is worth.
        let awake = match self.spec.is_http() {
            true => Duration::ZERO,
            false => LOCAL_ANSWER,
        };
        let answer = tokio::time::timeout(limit, awake_for(awake, handle.rx)).await;
        let answer = match answer {
            Err(_) => {
                // The guard sends notifications/cancelled.
                return Err(McpError::Timeout {
                    server: self.name.clone(),
                    what,
                    limit,
                });
            }
            Ok(answer) => {
                guard.id = None;
                answer
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                self.succeeded_if_needed().await;
                Ok(result)
            }
            Ok(Ok(_)) => Err(McpError::Protocol {
                server: self.name.clone(),
                message: format!("it answered `{what}` with something else than a tool result"),
                stderr: String::new(),
                process: !self.spec.is_http(),
            }),
            Ok(Err(e)) => Err(self.service_error(&conn, &what, e).await),
            Err(_closed) => Err(self.gone(&conn, &what, "the connection closed").await),
        }
    }

    async fn succeeded_if_needed(&self) {
        // Cheap when nothing failed: one uncontended lock.
        let failed = self.state.lock().await.failures > 0;
        if failed {
            self.succeeded().await;
        }
    }

    async fn service_error(&self, conn: &Arc<Connection>, what: &str, e: ServiceError) -> McpError {
        let message = match e {
            ServiceError::McpError(data) => {
                return McpError::Server {
                    server: self.name.clone(),
                    what: what.to_string(),
                    code: data.code.0,
                    message: data.message.to_string(),
                    data: data.data.as_ref().map(|d| shortened(&d.to_string())),
                };
            }
            ServiceError::Timeout { timeout } => {
                return McpError::Timeout {
                    server: self.name.clone(),
                    what: what.to_string(),
                    limit: timeout,
                };
            }
            ServiceError::UnexpectedResponse => {
                return McpError::Protocol {
                    server: self.name.clone(),
                    message: format!("it answered `{what}` with a result of another request"),
                    stderr: String::new(),
                    process: !self.spec.is_http(),
                };
            }
            // The transport's own error, without the wrapper that names its Rust type.
            ServiceError::TransportSend(e) => match with_causes(&*e.error) {
                // An HTTP error status: the request was sent, and refused.
                status if status.starts_with("HTTP ") => format!("it answered {status}"),
                cause => format!("the request could not be sent: {cause}"),
            },
            ServiceError::TransportClosed => "the connection closed".to_string(),
            ServiceError::Cancelled { .. } => "the connection was shut down".to_string(),
            other => other.to_string(),
        };
        self.gone(conn, what, &message).await
    }

    /// The error of a connection that went away: how its process ended when it did, and its
    /// stderr tail (given a moment to arrive).
    async fn gone(&self, conn: &Arc<Connection>, what: &str, message: &str) -> McpError {
        let ended = match &conn.group {
            Some(group) => group.how_it_ended(EXIT_WAIT).await,
            None => None,
        };
        match ended {
            Some(_) => conn.diagnostics.stderr_settled(EXIT_WAIT).await,
            None => tokio::time::sleep(Duration::from_millis(50)).await,
        }
        self.went_away(conn).await;
        let process = !self.spec.is_http();
        match conn.diagnostics.fault() {
            Some(fault) => McpError::Protocol {
                server: self.name.clone(),
                message: fault,
                stderr: conn.diagnostics.stderr_tail(),
                process,
            },
            None => McpError::Gone {
                server: self.name.clone(),
                what: what.to_string(),
                message: ended.unwrap_or_else(|| message.to_string()),
                stderr: conn.diagnostics.stderr_tail(),
                process,
            },
        }
    }
}

/// `text`, cut to a few hundred characters.
fn shortened(text: &str) -> String {
    const MAX: usize = 500;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut cut = MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// An error and the causes under it (a reset connection, a response that is not HTTP), joined:
/// the transport's own message often says only that a request failed.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    // The HTTP client's error is held without being its source: its causes are read from it.
    if let Some(StreamableHttpError::Client(client)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return with_causes(client);
    }
    agentry::error_with_causes(error)
}

/// Why initialization failed, in words (without the Rust types rmcp's messages show).
fn init_failure(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::ConnectionClosed(_) => "the connection closed before it answered `initialize`".into(),
        E::TransportError { error, .. } => {
            format!(
                "`initialize` could not be sent: {}",
                with_causes(&*error.error)
            )
        }
        E::JsonRpcError(data) => format!(
            "it answered `initialize` with error {}: {}",
            data.code.0, data.message
        ),
        E::ExpectedInitResponse(_) | E::ExpectedInitResult(_) => {
            "it answered `initialize` with something else than an initialize result".into()
        }
        E::NoCompatibleProtocolVersion { .. } => format!(
            "it speaks no protocol version this client speaks ({})",
            PROTOCOL_VERSIONS.join(", ")
        ),
        other => other.to_string(),
    }
}

/// A call in flight: when dropped before its answer (a cancelled run, a time limit), sends
/// `notifications/cancelled`, then a ping: a stdio server that does not answer it within
/// [`HUNG_AFTER`] is hung, and its process group is ended (it starts again when next used).
/// Always stops routing the call's progress.
struct InFlight {
    conn: Arc<Connection>,
    id: Option<RequestId>,
    shared: Arc<Shared>,
    token: Option<String>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            self.shared.watchers().remove(&token);
        }
        let Some(id) = self.id.take() else { return };
        let conn = self.conn.clone();
        let notification = ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting (cancelled or timed out)".into()),
            ),
        ));
        let server = self.shared.server.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let peer = conn.peer();
                let _ = peer.send_notification(notification).await;
                if conn.group.is_none() || !conn.is_live() {
                    return;
                }
                let ping = peer.send_request(ClientRequest::PingRequest(Default::default()));
                if !matches!(tokio::time::timeout(HUNG_AFTER, ping).await, Ok(Ok(_))) {
                    tracing::warn!(%server, "MCP server did not answer a ping after a call was cancelled; its process is ended and it is started again when next used");
                    conn.end_hung();
                }
            });
        }
    }
}
