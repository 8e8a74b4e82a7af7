//! The server: its agents and settings, its router, and serving it until shutdown.

use crate::agents::ServedAgent;
use crate::error::ApiError;
use crate::guard::{Guard, guard};
use crate::hub::Hubs;
use crate::state::{AppState, Inner};
use crate::{
    doors, fork, hook_timings, inspector, media, meta, recovery, replay, runs, sessions, steps,
    stream,
};
use agentry::{Agent, AgentState, RunOptions, Runtime};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::serve::ListenerExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The largest request body by default: 2 MiB.
pub const DEFAULT_MAX_BODY: usize = 2 * 1024 * 1024;
/// The most bytes of request headers by default: 32 KiB.
pub const DEFAULT_MAX_HEADERS: usize = 32 * 1024;

/// Why a server cannot be built or cannot serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The runtime has no store: runs served over HTTP must outlive a request and the process.
    #[error(
        "the runtime has no store: give it one (Runtime::store) so served runs are kept and can be resumed"
    )]
    NoStore,
    /// No agent to serve.
    #[error("no agent to serve: add one with ServerBuilder::agent")]
    NoAgents,
    /// The default agent is not one of the agents.
    #[error("the default agent `{0}` is not served; the agents are {1}")]
    UnknownDefault(String, String),
    /// Bound beyond this machine without a token.
    #[error(
        "refusing to serve on {0} without a token: anyone who can reach it could run agents. Set AGENTRY_SERVER_TOKEN (or server.token), or bind 127.0.0.1"
    )]
    NoToken(SocketAddr),
    /// The socket failed.
    #[error("serving failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    runtime: Runtime,
    agents: BTreeMap<String, Arc<dyn ServedAgent>>,
    default_agent: Option<String>,
    token: Option<String>,
    cors_origins: Vec<String>,
    max_body: usize,
    max_headers: usize,
    poll: Duration,
    events_page: usize,
    options: RunOptions,
    hook_timings: bool,
    session_end: Option<SessionEnd>,
    prices: BTreeMap<String, agentry::Price>,
}

/// What ends a session for the hooks (`POST /v1/sessions/{id}/end`): given the session id and
/// the reason, it runs their SessionEnd handlers (see [`ServerBuilder::on_session_end`]).
pub type SessionEnd = Arc<
    dyn Fn(String, String) -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync,
>;

impl ServerBuilder {
    /// Runs `end` when a client ends a session (`POST /v1/sessions/{id}/end` with a `reason`):
    /// the place to fire SessionEnd hooks, as Claude Code does when a conversation ends (the
    /// `agentry serve` command passes its command hooks' sessions). A failure is the
    /// request's error (500, naming it).
    pub fn on_session_end<F, Fut>(mut self, end: F) -> Self
    where
        F: Fn(String, String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
    {
        self.session_end = Some(Arc::new(move |session, reason| {
            Box::pin(end(session, reason))
        }));
        self
    }

    /// Options every served run starts with (hooks and tool sources of its own, stored ones
    /// included); a request's session, user, tags and metadata are added to them.
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// Serves `agent` under its name. The first agent added is the default unless
    /// [`default_agent`](Self::default_agent) names another.
    pub fn agent<S, O>(mut self, agent: Agent<S, O>) -> Self
    where
        S: AgentState,
        O: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let name = agent.name().to_owned();
        if self.default_agent.is_none() {
            self.default_agent = Some(name.clone());
        }
        self.agents.insert(name, Arc::new(agent));
        self
    }

    /// Prices the runs of the agent `agent` at `price`: the run API's runs and listings, and
    /// the inspector, show what their tokens cost (`cost_usd`). An agent without a price shows
    /// tokens only.
    pub fn price(mut self, agent: impl Into<String>, price: agentry::Price) -> Self {
        self.prices.insert(agent.into(), price);
        self
    }

    /// The agent a request that names none runs.
    pub fn default_agent(mut self, name: impl Into<String>) -> Self {
        self.default_agent = Some(name.into());
        self
    }

    /// The bearer token every request (but `/healthz`) must carry. Without one the server only
    /// binds loopback addresses and only answers requests addressed to `localhost`.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.token = (!token.is_empty()).then_some(token);
        self
    }

    /// Web origins (`https://app.example`) whose pages may call the server from a browser
    /// (CORS). None by default: browsers let no other origin read a response.
    pub fn cors_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The largest request body, in bytes ([`DEFAULT_MAX_BODY`] by default).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The most bytes of request headers ([`DEFAULT_MAX_HEADERS`] by default).
    pub fn max_header_bytes(mut self, bytes: usize) -> Self {
        self.max_headers = bytes;
        self
    }

    /// Whether every hook run is recorded in its run's history as a `hook_ran` custom event
    /// (the hook, the event it handled, its duration in microseconds), which the inspector
    /// shows beside the hooks' decisions. On by default; runs without hooks pay nothing.
    pub fn hook_timings(mut self, on: bool) -> Self {
        self.hook_timings = on;
        self
    }

    /// How often an event stream of a run that another process drives looks for new events
    /// in the store (250 ms by default).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }

    /// How many stored events an event stream reads from the store at once
    /// ([`agentry::DEFAULT_EVENTS_PAGE`], 1,000, by default), so a client that follows a long
    /// run from its start never makes the server hold its whole history.
    ///
    /// # Panics
    /// When `events` is zero.
    pub fn events_page(mut self, events: usize) -> Self {
        assert!(events > 0, "a page must hold at least one event");
        self.events_page = events;
        self
    }

    /// The server.
    ///
    /// # Errors
    /// The runtime has no store, there is no agent, or the default agent is not one of them.
    pub fn build(self) -> Result<Server, ServerError> {
        let store = self
            .runtime
            .run_store()
            .cloned()
            .ok_or(ServerError::NoStore)?;
        let default_agent = self.default_agent.ok_or(ServerError::NoAgents)?;
        if !self.agents.contains_key(&default_agent) {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            return Err(ServerError::UnknownDefault(default_agent, known.join(", ")));
        }
        let redactor = self.runtime.redactor().cloned();
        let runtime = if self.hook_timings {
            hook_timings::record(self.runtime)
        } else {
            self.runtime
        };
        Ok(Server {
            state: AppState(Arc::new(Inner {
                runtime,
                store,
                agents: self.agents,
                default_agent,
                hubs: Arc::new(Hubs::default()),
                redactor,
                shutdown: CancellationToken::new(),
                poll: self.poll,
                events_page: self.events_page,
                options: self.options,
                token_required: self.token.is_some(),
                session_end: self.session_end,
                prices: Arc::new(self.prices),
            })),
            token: self.token,
            cors_origins: self.cors_origins,
            max_body: self.max_body,
            max_headers: self.max_headers,
        })
    }
}

/// Agents behind HTTP: the run API on axum, over the runtime's store and hooks.
///
/// Build one with [`Server::builder`], then [`serve`](Self::serve) it on a listener, or take
/// its [`router`](Self::router) into a service of your own.
pub struct Server {
    state: AppState,
    token: Option<String>,
    cors_origins: Vec<String>,
    max_body: usize,
    max_headers: usize,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("agents", &self.state.agents.keys().collect::<Vec<_>>())
            .field("default_agent", &self.state.default_agent)
            .field("token", &self.token.is_some())
            .field("cors_origins", &self.cors_origins)
            .finish_non_exhaustive()
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentry",
        description = "Agents behind HTTP: start runs, follow their events (Server-Sent Events, resumable with Last-Event-ID), decide approvals, cancel, resume, and hold conversations across runs (sessions)."
    ),
    tags(
        (name = "runs", description = "Runs of agents"),
        (name = "sessions", description = "Conversations across runs"),
        (name = "server", description = "The server itself"),
    ),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        openapi.security = Some(vec![utoipa::openapi::security::SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
    }
}

impl Server {
    /// A server of `runtime`'s agents added with [`ServerBuilder::agent`]. The runtime must
    /// have a store; its hooks, limits and redactor apply to every run served.
    pub fn builder(runtime: Runtime) -> ServerBuilder {
        ServerBuilder {
            runtime,
            agents: BTreeMap::new(),
            default_agent: None,
            token: None,
            cors_origins: Vec::new(),
            max_body: DEFAULT_MAX_BODY,
            max_headers: DEFAULT_MAX_HEADERS,
            poll: Duration::from_millis(250),
            events_page: agentry::DEFAULT_EVENTS_PAGE,
            options: RunOptions::new(),
            hook_timings: true,
            session_end: None,
            prices: BTreeMap::new(),
        }
    }

    fn api(&self) -> OpenApiRouter<AppState> {
        OpenApiRouter::with_openapi(ApiDoc::openapi())
            .routes(routes!(meta::health))
            .routes(routes!(meta::agents))
            .routes(routes!(runs::start_run, runs::list_runs))
            .routes(routes!(runs::get_run))
            .routes(routes!(runs::run_messages))
            .routes(routes!(stream::run_events))
            .routes(routes!(steps::run_steps))
            .routes(routes!(runs::decide))
            .routes(routes!(runs::cancel))
            .routes(routes!(runs::resume))
            .routes(routes!(replay::replay_run))
            .routes(routes!(fork::fork_run))
            .routes(routes!(media::media))
            .routes(routes!(sessions::list_sessions))
            .routes(routes!(sessions::get_session))
            .routes(routes!(sessions::session_run))
            .routes(routes!(sessions::end_session))
    }

    /// The OpenAPI 3.1 document of the run API, generated from the handlers' types (served at
    /// `/openapi.json`).
    pub fn openapi(&self) -> utoipa::openapi::OpenApi {
        let mut doc = self.api().into_openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        doc
    }

    /// The router: every endpoint with its limits, guard and CORS. `local` says the server
    /// listens on a loopback address (without a token, it then answers only requests addressed
    /// to `localhost`).
    pub fn router(&self, local: bool) -> Router {
        let doc = Arc::new(self.openapi());
        let (router, _) = self.api().split_for_parts();
        let guard_state = Guard {
            token: self.token.as_deref().map(|t| Arc::from(t.as_bytes())),
            loopback_hosts_only: local && self.token.is_none(),
            max_header_bytes: self.max_headers,
        };
        let mut router = router
            .route(
                "/openapi.json",
                axum::routing::get(move || {
                    let doc = Arc::clone(&doc);
                    async move { axum::Json((*doc).clone()) }
                }),
            )
            .route("/v1/models", axum::routing::get(doors::openai::models))
            .route(
                "/v1/chat/completions",
                axum::routing::post(doors::openai::chat_completions),
            )
            .route(
                "/v1/responses",
                axum::routing::post(doors::openai::responses),
            )
            .route("/v1/ui/{agent}", axum::routing::post(doors::ai_sdk::chat))
            .route("/v1/ag-ui/{agent}", axum::routing::post(doors::ag_ui::run))
            .route("/a2a/{agent}", axum::routing::post(doors::a2a::rpc))
            .route(
                "/a2a/{agent}/.well-known/agent-card.json",
                axum::routing::get(doors::a2a::agent_card),
            )
            .route(
                "/.well-known/agent-card.json",
                axum::routing::get(doors::a2a::default_card),
            )
            .route(
                "/v1/ui/{agent}/{chat}/stream",
                axum::routing::get(doors::ai_sdk::resume_stream),
            )
            .merge(inspector::routes())
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .with_state(self.state.clone())
            .layer(DefaultBodyLimit::max(self.max_body))
            .layer(axum::middleware::from_fn_with_state(guard_state, guard));
        if !self.cors_origins.is_empty() {
            let origins: Vec<HeaderValue> = self
                .cors_origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect();
            router = router.layer(
                CorsLayer::new()
                    .allow_origin(AllowOrigin::list(origins))
                    .allow_methods([Method::GET, Method::POST])
                    .allow_headers([
                        header::AUTHORIZATION,
                        header::CONTENT_TYPE,
                        HeaderName::from_static("last-event-id"),
                    ]),
            );
        }
        router
    }

    /// Refuses an address beyond this machine without a token.
    ///
    /// # Errors
    /// [`ServerError::NoToken`].
    pub fn check_bind(&self, addr: SocketAddr) -> Result<(), ServerError> {
        if !addr.ip().is_loopback() && self.token.is_none() {
            return Err(ServerError::NoToken(addr));
        }
        Ok(())
    }

    /// Serves on `listener` until `shutdown` resolves: runs whose process died are resumed
    /// (now and whenever another server's lease on one lapses); at shutdown, event streams end
    /// and the runs this server drives are left at their last checkpoint for the next start
    /// (or another server) to resume.
    ///
    /// # Errors
    /// Bound beyond this machine without a token ([`ServerError::NoToken`]), or the socket
    /// failed.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let addr = listener.local_addr()?;
        self.check_bind(addr)?;
        let router = self.router(addr.ip().is_loopback());
        let state = self.state.clone();
        let recovering = tokio::spawn(recovery::recover(state.clone()));
        let stop = state.shutdown.clone();
        // Streams are many small writes: without TCP_NODELAY each one after the first waits
        // for the client's delayed acknowledgement (up to 40 ms on a kept-alive connection).
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY could not be set on a connection");
            }
        });
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop.cancel();
            })
            .await;
        recovering.abort();
        recovery::leave(&state).await;
        served.map_err(ServerError::Io)
    }
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no endpoint at {}; /openapi.json lists them",
        uri.path()
    ))
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {}; /openapi.json lists what is",
            uri.path()
        ),
    )
}
