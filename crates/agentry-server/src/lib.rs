//! # agentry-server
//!
//! `agentry serve`: agents behind HTTP. A [`Server`] serves a [`Runtime`](agentry::Runtime)'s
//! agents over the run API on axum:
//!
//! | endpoint | what it does |
//! |---|---|
//! | `POST /v1/runs` | start a run of an agent (input, session, user, tags, metadata; `wait` for the end) |
//! | `GET /v1/runs` | list runs (by status, agent, session), newest first, a page at a time |
//! | `GET /v1/runs/{id}` | a run: status, output, text, pending approvals, usage |
//! | `GET /v1/runs/{id}/messages` | its history |
//! | `GET /v1/runs/{id}/events` | its events as Server-Sent Events, resumable with `Last-Event-ID` |
//! | `POST /v1/runs/{id}/approvals` | decide its pending calls: approve, reject with a reason, reject and stop |
//! | `POST /v1/runs/{id}/cancel` | cancel it (in this server, another one, or paused) |
//! | `POST /v1/runs/{id}/resume` | resume a cancelled, failed or orphaned run |
//! | `POST /v1/runs/{id}/replay` | replay it with today's hooks (recorded model turns and tool results, nothing called, nothing stored) and say where the decisions differ |
//! | `GET /v1/sessions`, `GET /v1/sessions/{id}`, `POST /v1/sessions/{id}/runs` | conversations across runs |
//! | `GET /v1/agents`, `GET /healthz`, `GET /openapi.json` | the agents, health, the OpenAPI 3.1 document |
//! | `GET /` | the run inspector: runs, a run's live timeline, approvals, chat (a page over these endpoints) |
//!
//! Every run goes through the runtime, so every hook runs whichever door a request came in by,
//! and every run is in the store: a run started over HTTP survives the server (runs whose
//! process died are resumed by the next server to start, or by another server on the same
//! store), and any server on a shared store streams, decides or cancels any run.
//!
//! Secure by default: without a token the server binds only loopback addresses and answers
//! only requests addressed to `localhost`; with one, every request but `/healthz` must carry
//! it (`Authorization: Bearer`, compared in constant time). Bodies and headers have size
//! limits, CORS is closed unless origins are given, there are no cookies, error bodies are
//! JSON (`{"code", "message"}`) without traces, and what the runtime's redactor masks is
//! masked in every response and event.
//!
//! ```no_run
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentry::prelude::*;
//! use agentry_server::Server;
//!
//! let agent = Agent::builder("greeter")
//!     .model(ScriptedModel::new().text("Hello!"))
//!     .build()?;
//! let runtime = Runtime::new().store(agentry::MemoryStore::new());
//! let server = Server::builder(runtime).agent(agent).build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7777").await?;
//! server.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
#![warn(missing_docs, unreachable_pub)]

mod agents;
mod api;
mod doors;
mod error;
mod event_id;
mod extract;
mod fork;
mod guard;
mod hook_timings;
mod hub;
mod inspector;
mod media;
mod meta;
mod pricing;
mod recovery;
mod replay;
mod runs;
mod server;
mod sessions;
mod state;
mod steps;
mod stream;

pub use api::{
    AgentView, Decide, DecisionBody, DecisionKind, EndSession, ForkRun, Health, ListRuns,
    ListSessions, MessagesView, PendingView, RunItem, RunPage, RunView, SessionInput, SessionItem,
    SessionPage, SessionView, StartRun, StreamEvents,
};
pub use error::{ApiError, ErrorBody};
pub use steps::{RunSteps, StepSummary};

/// The guide: the book's chapter on `agentry serve`, the run API, the doors and security.
#[doc = include_str!("../../../docs/src/server.md")]
pub mod guide {}
pub use server::{
    DEFAULT_MAX_BODY, DEFAULT_MAX_HEADERS, Server, ServerBuilder, ServerError, SessionEnd,
};
