//! What the server says about itself: its health, its agents, its OpenAPI document.

use crate::api::{AgentView, Health};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;

/// The server is up (no token needed).
#[utoipa::path(get, path = "/healthz", tag = "server", responses((status = 200, body = Health)))]
pub(crate) async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The agents this server serves.
#[utoipa::path(get, path = "/v1/agents", tag = "server", responses((status = 200, body = Vec<AgentView>)))]
pub(crate) async fn agents(State(state): State<AppState>) -> Json<Vec<AgentView>> {
    Json(
        state
            .agents
            .values()
            .map(|a| AgentView {
                name: a.name().to_owned(),
                description: a.description().map(str::to_owned),
                default: a.name() == state.default_agent,
            })
            .collect(),
    )
}
