//! A stored run forked from the end of one of its steps: a new run with the history and state
//! as they were then, or with another input or state ("what if the model had been told this?").

use crate::agents::Go;
use crate::api::{ForkRun, RunView};
use crate::error::{ApiError, ErrorBody};
use crate::extract::JsonBody;
use crate::state::AppState;
use agentry::{Fork, ForkError};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Starts a new run from the end of step `step` of a stored run (0: its start), with the
/// history and state as they were then; `input` replaces the run's input (step 0) or is the
/// user's next message, `state` replaces the state. The stored run is left as it is; the fork's
/// metadata names it (`forked_from`, `forked_at_step`).
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/fork", tag = "runs",
    params(("run_id" = String, Path, description = "The stored run to fork")),
    request_body = ForkRun,
    responses(
        (status = 202, description = "The fork started, and is in the store (or, with `wait`, 200: ended or paused)", body = RunView),
        (status = 404, body = ErrorBody),
        (status = 409, description = "It has no such step, was compacted, or the step ended with an answer and no input was given", body = ErrorBody),
    ),
)]
pub(crate) async fn fork_run(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    JsonBody(req): JsonBody<ForkRun>,
) -> Result<Response, ApiError> {
    let stored = state.load(&run_id).await?;
    let agent = state.agent(Some(&stored.snapshot.agent))?.clone();
    let events = state.store.events(&run_id).await?;
    let mut fork = Fork::at(req.step);
    if let Some(input) = req.input.filter(|i| !i.trim().is_empty()) {
        fork = fork.input(input);
    }
    if let Some(s) = req.state {
        fork = fork.state(s);
    }
    let forked = uuid::Uuid::new_v4().to_string();
    let snapshot = fork
        .snapshot(&stored.snapshot, &events, forked.clone())
        .map_err(|e| match e {
            ForkError::NoSuchStep { .. } => {
                ApiError::new(StatusCode::CONFLICT, "no_such_step", e.to_string())
            }
            e => ApiError::conflict(e.to_string()),
        })?;
    let (step, metadata) = (snapshot.step, snapshot.metadata.clone());
    let hub = state
        .launch(
            &agent,
            &forked,
            Go::Fork {
                snapshot: Box::new(snapshot),
            },
            0,
        )
        .await?;
    if req.wait {
        return crate::runs::finished(&state, &forked, &hub).await;
    }
    let priced = state.prices.contains_key(agent.name());
    let mut view = RunView::started(&forked, agent.name(), None, step, metadata, priced);
    view.user_id = stored.snapshot.user_id.clone();
    Ok((
        StatusCode::ACCEPTED,
        Json(state.redact(serde_json::to_value(view).unwrap_or_default())),
    )
        .into_response())
}
