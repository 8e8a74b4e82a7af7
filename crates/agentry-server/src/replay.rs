//! A stored run replayed with the agent's hooks as they are now: its recorded model turns played
//! back, its recorded tool results given back, nothing called and nothing stored; the answer says
//! where the decisions differ.

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use agentry::replay::ReplayReport;
use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;

/// The answer: which run, and the report.
#[derive(Serialize)]
struct Replayed<'a> {
    run_id: &'a str,
    agent: &'a str,
    #[serde(flatten)]
    report: &'a ReplayReport,
}

/// Replays a run with today's hooks and compares: each recorded tool call's outcome then and
/// now (the hooks' decisions, a person's rejection, the result), and how the run ended.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/replay", tag = "runs",
    params(("run_id" = String, Path, description = "The stored run")),
    responses(
        (status = 200, description = "The replay against the recording: `calls` (each with `recorded`, `replay` and `same`), `recorded_end`, `replay_end`, `differences`", body = Object),
        (status = 404, body = ErrorBody),
        (status = 409, description = "It has nothing to replay", body = ErrorBody),
    ),
)]
pub(crate) async fn replay_run(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let stored = state.load(&run_id).await?;
    let agent = state.agent(Some(&stored.snapshot.agent))?.clone();
    let events = state.store.events(&run_id).await?;
    let report = agent
        .replay(&state.runtime, &events)
        .await
        .map_err(|e| ApiError::conflict(format!("run `{run_id}` cannot be replayed: {e}")))?;
    let answer = serde_json::to_value(Replayed {
        run_id: &run_id,
        agent: &stored.snapshot.agent,
        report: &report,
    })
    .unwrap_or_default();
    Ok(Json(state.redact(answer)))
}
