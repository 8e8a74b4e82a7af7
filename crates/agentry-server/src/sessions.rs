//! Sessions: conversations across runs. A run in a session goes on from the session's last run.

use crate::api::{
    EndSession, ListSessions, RunItem, SessionInput, SessionItem, SessionPage, SessionView,
    messages_json,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, QueryArgs};
use crate::runs::{MAX_PAGE, PAGE, start};
use crate::state::AppState;
use agentry::RunQuery;
use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;

/// Lists sessions, the most recently active first.
#[utoipa::path(
    get, path = "/v1/sessions", tag = "sessions", params(ListSessions),
    responses((status = 200, body = SessionPage), (status = 400, body = ErrorBody)),
)]
pub(crate) async fn list_sessions(
    State(state): State<AppState>,
    QueryArgs(q): QueryArgs<ListSessions>,
) -> Result<Json<SessionPage>, ApiError> {
    let limit = q.limit.unwrap_or(PAGE).clamp(1, MAX_PAGE) as usize;
    let mut query = RunQuery::all();
    query.agent = q.agent;
    let mut seen = std::collections::HashSet::new();
    let sessions = state
        .store
        .list(&query)
        .await?
        .into_iter()
        .filter(|r| r.parent_run_id.is_none())
        .filter_map(|r| {
            let session_id = r.session_id.clone()?;
            seen.insert(session_id.clone()).then(|| SessionItem {
                session_id,
                agent: r.agent,
                latest_run_id: r.run_id,
                status: r.status.as_str().to_owned(),
                updated_ms: r.updated_ms,
            })
        })
        .take(limit)
        .collect();
    Ok(Json(SessionPage { sessions }))
}

/// A session's runs and its conversation so far.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "The session")),
    responses((status = 200, body = SessionView), (status = 404, body = ErrorBody)),
)]
pub(crate) async fn get_session(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let runs: Vec<RunItem> = state
        .store
        .list(&RunQuery::session(session_id.clone()))
        .await?
        .into_iter()
        .filter(|r| r.parent_run_id.is_none())
        .map(|s| state.item(s))
        .collect();
    let Some(latest) = runs.first() else {
        return Err(ApiError::not_found(format!(
            "no session `{session_id}` in the store"
        )));
    };
    let stored = state.load(&latest.run_id).await?;
    let messages = messages_json(stored.snapshot.messages.iter());
    let view = SessionView {
        session_id,
        runs,
        messages,
    };
    Ok(Json(
        state.redact(serde_json::to_value(view).unwrap_or_default()),
    ))
}

/// Starts a run in a session: the agent goes on from the session's last run.
#[utoipa::path(
    post, path = "/v1/sessions/{session_id}/runs", tag = "sessions",
    params(("session_id" = String, Path, description = "The session (a new one when unknown)")),
    request_body = SessionInput,
    responses(
        (status = 202, description = "Started (or, with `wait`, 200: ended or paused)", body = crate::api::RunView),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
    ),
)]
pub(crate) async fn session_run(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    JsonBody(req): JsonBody<SessionInput>,
) -> Result<Response, ApiError> {
    let agent = match req.agent {
        Some(agent) => Some(agent),
        None => state
            .store
            .list(&RunQuery::session(session_id.clone()).limit(1))
            .await?
            .into_iter()
            .next()
            .map(|r| r.agent),
    };
    let mut options = state.options.clone();
    if let Some(user) = req.user_id {
        options = options.user(user);
    }
    let input = crate::api::run_input(req.parts, req.input).map_err(ApiError::bad_request)?;
    start(
        &state,
        agent.as_deref(),
        input,
        Some(session_id),
        options,
        req.wait,
    )
    .await
}

/// Ends a session: its SessionEnd hooks run with `reason` (`other` when left out), as when a
/// Claude Code conversation ends. The session's runs stay in the store; a run started in it
/// later begins it again (SessionStart `resume`).
#[utoipa::path(
    post, path = "/v1/sessions/{session_id}/end", tag = "sessions",
    params(("session_id" = String, Path, description = "The session")),
    request_body(content = EndSession, description = "Optional: `{}` ends it with reason `other`"),
    responses(
        (status = 204, description = "Ended: its SessionEnd hooks ran"),
        (status = 404, body = ErrorBody), (status = 500, description = "A SessionEnd hook failed", body = ErrorBody),
    ),
)]
pub(crate) async fn end_session(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<axum::http::StatusCode, ApiError> {
    let end: EndSession = match body.iter().all(u8::is_ascii_whitespace) {
        true => EndSession::default(),
        false => serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(format!("the body is not `{{\"reason\": \"...\"}}`: {e}"))
        })?,
    };
    let reason = end.reason.unwrap_or_else(|| "other".to_owned());
    let known = !state
        .store
        .list(&RunQuery::session(session_id.clone()).limit(1))
        .await?
        .is_empty();
    if !known {
        return Err(ApiError::not_found(format!(
            "no session `{session_id}` in the store"
        )));
    }
    if let Some(end) = &state.session_end {
        end(session_id.clone(), reason).await.map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "session_end_failed",
                format!("the SessionEnd hooks of session `{session_id}` failed: {e}"),
            )
        })?;
    }
    Ok(axum::http::StatusCode::NO_CONTENT)
}
