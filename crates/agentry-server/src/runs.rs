//! The run endpoints: start, list, get, history, decide, cancel, resume.

use crate::agents::Go;
use crate::api::{self, Decide, ListRuns, MessagesView, RunItem, RunPage, RunView, StartRun};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, QueryArgs};
use crate::hub::RunHub;
use crate::state::AppState;
use agentry::{Content, RunOptions, RunQuery, RunStatus, store::now_ms};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// How many runs a page lists by default, and at most.
pub(crate) const PAGE: u32 = 50;
pub(crate) const MAX_PAGE: u32 = 500;

/// Starts a run of an agent; its events stream at `events_url`.
#[utoipa::path(
    post, path = "/v1/runs", tag = "runs",
    request_body = StartRun,
    responses(
        (status = 202, description = "Started, and in the store: any server on it finds the run (or, with `wait`, 200: ended or paused)", body = RunView),
        (status = 400, body = ErrorBody), (status = 404, description = "No such agent", body = ErrorBody),
    ),
)]
pub(crate) async fn start_run(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<StartRun>,
) -> Result<Response, ApiError> {
    let mut options = state.options.clone();
    if let Some(user) = req.user_id {
        options = options.user(user);
    }
    for tag in req.tags {
        options = options.tag(tag);
    }
    for (k, v) in req.metadata {
        options = options.metadata(k, v);
    }
    let input = api::run_input(req.parts, req.input).map_err(ApiError::bad_request)?;
    start(
        &state,
        req.agent.as_deref(),
        input,
        req.session_id,
        options,
        req.wait,
    )
    .await
}

/// Starts a run (for the run and session endpoints).
pub(crate) async fn start(
    state: &AppState,
    agent: Option<&str>,
    input: Content,
    session: Option<String>,
    options: RunOptions,
    wait: bool,
) -> Result<Response, ApiError> {
    let agent = state.agent(agent)?;
    let run_id = uuid::Uuid::new_v4().to_string();
    let session = session.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let options = options.run_id(run_id.clone()).session(session.clone());
    let metadata = options.metadata.clone();
    let hub = state
        .launch(
            agent,
            &run_id,
            Go::Start {
                input,
                options: Box::new(options),
            },
            0,
        )
        .await?;
    if wait {
        return finished(state, &run_id, &hub).await;
    }
    let priced = state.prices.contains_key(agent.name());
    let view = RunView::started(&run_id, agent.name(), Some(session), 0, metadata, priced);
    Ok((StatusCode::ACCEPTED, Json(view)).into_response())
}

/// Waits for a drive to end, then answers with the run as stored.
pub(crate) async fn finished(
    state: &AppState,
    run_id: &str,
    hub: &Arc<RunHub>,
) -> Result<Response, ApiError> {
    let mut changed = hub.watch();
    while !hub.is_done() {
        tokio::select! {
            r = changed.changed() => if r.is_err() { break },
            () = state.shutdown.cancelled() => break,
        }
    }
    view(state, run_id).await.map(IntoResponse::into_response)
}

async fn view(state: &AppState, run_id: &str) -> Result<Json<serde_json::Value>, ApiError> {
    let stored = state.load(run_id).await?;
    let view = serde_json::to_value(state.view(&stored)).unwrap_or_default();
    Ok(Json(state.redact(view)))
}

/// Lists runs, newest first, a page at a time.
#[utoipa::path(
    get, path = "/v1/runs", tag = "runs", params(ListRuns),
    responses((status = 200, body = RunPage), (status = 400, body = ErrorBody)),
)]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    QueryArgs(q): QueryArgs<ListRuns>,
) -> Result<Json<RunPage>, ApiError> {
    let status = q.status().map_err(ApiError::bad_request)?;
    let limit = q.limit.unwrap_or(PAGE).clamp(1, MAX_PAGE);
    let query = RunQuery {
        session_id: q.session_id,
        agent: q.agent,
        status,
        limit: Some(limit),
        before: q.before,
        top_level: q.top_level,
    };
    let runs: Vec<RunItem> = state
        .store
        .list(&query)
        .await?
        .into_iter()
        .map(|s| state.item(s))
        .collect();
    let next_before = (runs.len() == limit as usize)
        .then(|| runs.last().map(|r| r.run_id.clone()))
        .flatten();
    Ok(Json(RunPage { runs, next_before }))
}

/// A run as it stands: status, output, pending approvals, usage.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses((status = 200, body = RunView), (status = 404, body = ErrorBody)),
)]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    view(&state, &run_id).await
}

/// A run's history: every message, oldest first.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/messages", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses((status = 200, body = MessagesView), (status = 404, body = ErrorBody)),
)]
pub(crate) async fn run_messages(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let stored = state.load(&run_id).await?;
    let messages = crate::api::messages_json(stored.snapshot.messages.iter());
    let view = serde_json::to_value(MessagesView { run_id, messages }).unwrap_or_default();
    Ok(Json(state.redact(view)))
}

/// Decides a paused run's pending calls (approve, reject with a reason, reject and stop); the
/// run goes on in this server.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/approvals", tag = "runs",
    params(("run_id" = String, Path, description = "The paused run")),
    request_body = Decide,
    responses(
        (status = 202, description = "Decided; the run goes on", body = RunView),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Not waiting, or the decisions do not match its pending calls", body = ErrorBody),
    ),
)]
pub(crate) async fn decide(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    JsonBody(req): JsonBody<Decide>,
) -> Result<Response, ApiError> {
    let stored = state.load(&run_id).await?;
    let pending = AppState::pending(&stored).ok_or_else(|| {
        ApiError::conflict(format!(
            "run `{run_id}` is not waiting for approval (it is {})",
            stored.snapshot.status()
        ))
    })?;
    let decisions = req.resolve(pending).map_err(ApiError::bad_request)?;
    let hub = state.go_on(&stored, decisions).await?;
    if req.wait {
        return finished(&state, &run_id, &hub).await;
    }
    let mut view = state.view(&stored);
    view.status = RunStatus::Running.as_str().to_owned();
    view.stop = None;
    view.pending.clear();
    Ok((
        StatusCode::ACCEPTED,
        Json(state.redact(serde_json::to_value(view).unwrap_or_default())),
    )
        .into_response())
}

/// Cancels a run: one this server drives stops at its next await point, checkpointed; one
/// another server drives gets the request through the store; a paused one is cancelled where it
/// stands.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/cancel", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses(
        (status = 202, description = "Cancelling", body = RunView),
        (status = 404, body = ErrorBody), (status = 409, description = "It has ended", body = ErrorBody),
    ),
)]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    if let Some(hub) = state.hubs.get(&run_id).filter(|h| !h.is_done()) {
        hub.cancel();
    } else {
        let stored = state.load(&run_id).await?;
        match stored.snapshot.status() {
            RunStatus::Running => state.store.request_cancel(&run_id).await?,
            RunStatus::AwaitingApproval => state.runtime.cancel_paused(&run_id).await?,
            other => {
                return Err(ApiError::conflict(format!(
                    "run `{run_id}` is {other}: only a running or paused run can be cancelled"
                )));
            }
        }
    }
    let stored = state.load(&run_id).await?;
    let view = serde_json::to_value(state.view(&stored)).unwrap_or_default();
    Ok((StatusCode::ACCEPTED, Json(state.redact(view))).into_response())
}

/// Resumes a cancelled or failed run, or one whose server died, from its last checkpoint.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/resume", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses(
        (status = 202, description = "Resumed; the run goes on in this server", body = RunView),
        (status = 404, body = ErrorBody),
        (status = 409, description = "It is driven, paused or ended for good", body = ErrorBody),
    ),
)]
pub(crate) async fn resume(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let stored = state.load(&run_id).await?;
    match stored.snapshot.status() {
        RunStatus::Cancelled | RunStatus::Failed => {}
        RunStatus::Running if stored.driver_gone(now_ms()) => {}
        RunStatus::Running => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "leased",
                format!("run `{run_id}` is being driven; it cannot be resumed while it runs"),
            ));
        }
        RunStatus::AwaitingApproval => {
            return Err(ApiError::conflict(format!(
                "run `{run_id}` waits for approval: decide its pending calls (POST /v1/runs/{run_id}/approvals)"
            )));
        }
        RunStatus::Finished => {
            return Err(ApiError::conflict(format!(
                "run `{run_id}` has finished; start a new run in its session instead"
            )));
        }
    }
    let agent = state.agent(Some(&stored.snapshot.agent))?;
    let base = state.last_seq(&run_id).await?;
    state
        .launch(
            agent,
            &run_id,
            Go::Resume {
                run_id: run_id.clone(),
            },
            base,
        )
        .await?;
    let mut view = state.view(&stored);
    view.status = RunStatus::Running.as_str().to_owned();
    view.stop = None;
    view.error = None;
    Ok((
        StatusCode::ACCEPTED,
        Json(state.redact(serde_json::to_value(view).unwrap_or_default())),
    )
        .into_response())
}
