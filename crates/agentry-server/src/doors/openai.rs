//! The OpenAI-compatible door: `/v1/chat/completions`, `/v1/responses` (both streaming or
//! not) and `/v1/models`, so any OpenAI client calls an agent as if it were a model. The
//! request's `model` names the agent; the agent's tools and hooks run in the server, and the
//! client sees the answer. A stateless client's conversation reaches the agent as a transcript;
//! `previous_response_id` (responses) or the `X-Agentry-Session` header (chat) continue a
//! session instead, so the agent keeps its own history.

use super::media::{media_parts, with_media};
use super::{Outcome, content_text, ended, live, own, start, transcript_input};
use crate::agents::ServedAgent;
use crate::extract::JsonBody;
use crate::state::AppState;
use agentry::{RunEvent, Usage};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;

/// An error as OpenAI clients read it: `{"error": {"message", "type", "code"}}`.
pub(crate) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let kind = if status.is_server_error() {
        "server_error"
    } else {
        "invalid_request_error"
    };
    let body =
        json!({"error": {"message": message.into(), "type": kind, "param": null, "code": code}});
    (status, Json(body)).into_response()
}

/// `GET /v1/models`: the agents, as models.
pub(crate) async fn models(State(state): State<AppState>) -> Json<Value> {
    let data: Vec<Value> = state
        .agents
        .keys()
        .map(|name| json!({"id": name, "object": "model", "created": 0, "owned_by": "agentry"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// A chat completion request (fields OpenAI clients send that an agent has no use for, such as
/// `temperature`, are accepted and left aside: the agent's own settings stand).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    user: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Value,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

fn session_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get("x-agentry-session")
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn with_run_id(mut response: Response, run_id: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(run_id) {
        response.headers_mut().insert("x-agentry-run-id", v);
    }
    response
}

/// The agent `model` names, or an OpenAI-style 404 that lists the models.
fn agent_for(state: &AppState, model: &str) -> Result<Arc<dyn ServedAgent>, Box<Response>> {
    state.agents.get(model).cloned().ok_or_else(|| {
        let known: Vec<&str> = state.agents.keys().map(String::as_str).collect();
        Box::new(error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "no agent `{model}` is served here; the models are {}",
                known.join(", ")
            ),
        ))
    })
}

/// Starts a run of `agent` on a conversation's `turns`: in `session`, the last user turn (the
/// session holds the rest); else the whole conversation as a transcript. `field` names what
/// held the turns, for the error when there is no user turn.
async fn begin(
    state: &AppState,
    agent: &Arc<dyn ServedAgent>,
    turns: &[(String, String)],
    media: Result<Vec<agentry::Part>, String>,
    session: Option<String>,
    user: Option<&String>,
    field: &str,
) -> Result<super::Started, Box<Response>> {
    let media = media.map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("invalid_{field}"),
            format!("the last user message of `{field}`: {e}"),
        ))
    })?;
    let input = match session {
        Some(_) => turns
            .iter()
            .rev()
            .find(|(r, _)| r == "user")
            .map(|(_, t)| t.clone())
            .unwrap_or_default(),
        None => transcript_input(turns),
    };
    if input.trim().is_empty() && media.is_empty() {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("invalid_{field}"),
            format!("`{field}` holds no user message to answer"),
        )));
    }
    let mut options = state.options.clone();
    if let Some(user) = user {
        options = options.user(user.clone());
    }
    start(state, agent, with_media(media, input), session, options)
        .await
        .map_err(|e| Box::new(error(e.status(), e.code(), e.message())))
}

/// Waits for a run a door started to end: its outcome and usage, or a 500 that says why it
/// failed.
async fn settled(
    state: &AppState,
    started: &super::Started,
) -> Result<(Outcome, Usage), Box<Response>> {
    let run_id = &started.run_id;
    ended(state, &started.hub).await;
    let stored = state.store.load(run_id).await.ok().flatten();
    let outcome = Outcome::of(stored.as_ref());
    if let Outcome::Failed(why) = &outcome {
        let failed = error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "run_failed",
            format!("run `{run_id}` failed: {why}"),
        );
        return Err(Box::new(with_run_id(failed, run_id)));
    }
    Ok((
        outcome,
        stored.map(|s| s.snapshot.usage).unwrap_or_default(),
    ))
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<ChatRequest>,
) -> Response {
    let agent = match agent_for(&state, &req.model) {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    let turns: Vec<(String, String)> = req
        .messages
        .iter()
        .map(|m| (m.role.clone(), content_text(&m.content)))
        .collect();
    let session = session_header(&headers);
    let media = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map_or(Ok(Vec::new()), |m| media_parts(&m.content));
    let started = match begin(
        &state,
        &agent,
        &turns,
        media,
        session,
        req.user.as_ref(),
        "messages",
    )
    .await
    {
        Ok(started) => started,
        Err(response) => return *response,
    };
    let (run_id, model) = (started.run_id.clone(), req.model.clone());
    let id = format!("chatcmpl-{run_id}");
    let created = agentry::store::now_ms() / 1000;
    if !req.stream {
        let (outcome, usage) = match settled(&state, &started).await {
            Ok(settled) => settled,
            Err(response) => return *response,
        };
        let text = state.redact(Value::String(outcome.text().to_owned()));
        let body = json!({
            "id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": null}],
            "usage": usage_json(&usage),
        });
        return with_run_id(Json(body).into_response(), &run_id);
    }
    let include_usage = req.stream_options.is_some_and(|o| o.include_usage);
    let chunk = move |delta: Value, finish: Option<&str>| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        })
    };
    let events = live(&state, started.hub.clone());
    let stream_state = state.clone();
    let stream_run = run_id.clone();
    let stream = async_stream::stream! {
        yield Ok::<_, Infallible>(Event::default().data(chunk(json!({"role": "assistant", "content": ""}), None).to_string()));
        let mut wrote = false;
        futures::pin_mut!(events);
        while let Some(e) = events.next().await {
            if let RunEvent::TextDelta { text, .. } = &e.event && own(&e.event) {
                wrote = true;
                yield Ok(Event::default().data(chunk(json!({"content": text}), None).to_string()));
            }
        }
        let stored = stream_state.store.load(&stream_run).await.ok().flatten();
        let outcome = Outcome::of(stored.as_ref());
        match &outcome {
            Outcome::Failed(why) => {
                let body = json!({"error": {"message": format!("run `{stream_run}` failed: {why}"), "type": "server_error", "code": "run_failed"}});
                yield Ok(Event::default().data(body.to_string()));
            }
            Outcome::Answered(_) if wrote => {}
            other => {
                let text = stream_state.redact(Value::String(other.text().to_owned()));
                yield Ok(Event::default().data(chunk(json!({"content": text}), None).to_string()));
            }
        }
        let mut last = chunk(json!({}), Some("stop"));
        if include_usage {
            let usage = stored.map(|s| s.snapshot.usage).unwrap_or_default();
            last["usage"] = usage_json(&usage);
        }
        yield Ok(Event::default().data(last.to_string()));
        yield Ok(Event::default().data("[DONE]"));
    };
    with_run_id(
        Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response(),
        &run_id,
    )
}

/// A Responses API request.
#[derive(Debug, Deserialize)]
pub(crate) struct ResponsesRequest {
    model: String,
    input: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    user: Option<String>,
}

/// The turns of a Responses `input`: a string, or a list of messages.
fn response_turns(input: &Value) -> Vec<(String, String)> {
    match input {
        Value::String(s) => vec![("user".to_owned(), s.clone())],
        Value::Array(items) => items
            .iter()
            .filter(|i| i.get("type").is_none_or(|t| t == "message"))
            .map(|i| {
                let role = i
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("user")
                    .to_owned();
                (role, content_text(i.get("content").unwrap_or(&Value::Null)))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The run id a response id names.
fn run_of_response(id: &str) -> &str {
    id.strip_prefix("resp_").unwrap_or(id)
}

fn response_body(
    id: &str,
    model: &str,
    created: i64,
    status: &str,
    text: Option<&str>,
    usage: Option<&Usage>,
    run_id: &str,
) -> Value {
    let output: Vec<Value> = text
        .map(|t| json!({
            "type": "message", "id": format!("msg_{run_id}"), "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": t, "annotations": []}],
        }))
        .into_iter()
        .collect();
    json!({
        "id": id, "object": "response", "created_at": created, "status": status, "model": model,
        "output": output, "parallel_tool_calls": false, "tool_choice": "auto", "tools": [],
        "error": null, "incomplete_details": null, "instructions": null, "metadata": {},
        "usage": usage.map(|u| json!({
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
        })),
    })
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<ResponsesRequest>,
) -> Response {
    let agent = match agent_for(&state, &req.model) {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    let session = match &req.previous_response_id {
        Some(previous) => match state.store.load(run_of_response(previous)).await {
            Ok(Some(stored)) => stored.snapshot.session_id,
            Ok(None) => {
                return error(
                    StatusCode::NOT_FOUND,
                    "previous_response_not_found",
                    format!("no response `{previous}` here"),
                );
            }
            Err(e) => {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    e.to_string(),
                );
            }
        },
        None => None,
    };
    let mut turns = response_turns(&req.input);
    if let Some(instructions) = &req.instructions
        && session.is_none()
    {
        turns.insert(0, ("instructions".to_owned(), instructions.clone()));
    }
    let media = match &req.input {
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|i| i.get("type").is_none_or(|t| t == "message") && i["role"] == "user")
            .map_or(Ok(Vec::new()), |i| media_parts(&i["content"])),
        _ => Ok(Vec::new()),
    };
    let started = match begin(
        &state,
        &agent,
        &turns,
        media,
        session,
        req.user.as_ref(),
        "input",
    )
    .await
    {
        Ok(started) => started,
        Err(response) => return *response,
    };
    let run_id = started.run_id.clone();
    let id = format!("resp_{run_id}");
    let created = agentry::store::now_ms() / 1000;
    let model = req.model.clone();
    if !req.stream {
        let (outcome, usage) = match settled(&state, &started).await {
            Ok(settled) => settled,
            Err(response) => return *response,
        };
        let text = state.redact(Value::String(outcome.text().to_owned()));
        let body = response_body(
            &id,
            &model,
            created,
            "completed",
            text.as_str(),
            Some(&usage),
            &run_id,
        );
        return with_run_id(Json(body).into_response(), &run_id);
    }
    let events = live(&state, started.hub.clone());
    let (stream_state, stream_run) = (state.clone(), run_id.clone());
    let stream = async_stream::stream! {
        let mut seq = 0u64;
        let mut event = |kind: &str, mut body: Value| {
            body["type"] = json!(kind);
            body["sequence_number"] = json!(seq);
            seq += 1;
            Ok::<_, Infallible>(Event::default().event(kind).data(body.to_string()))
        };
        let item_id = format!("msg_{stream_run}");
        yield event("response.created", json!({"response": response_body(&id, &model, created, "in_progress", None, None, &stream_run)}));
        yield event("response.in_progress", json!({"response": response_body(&id, &model, created, "in_progress", None, None, &stream_run)}));
        yield event("response.output_item.added", json!({"output_index": 0, "item": {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}}));
        yield event("response.content_part.added", json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}));
        let mut text = String::new();
        futures::pin_mut!(events);
        while let Some(e) = events.next().await {
            if let RunEvent::TextDelta { text: delta, .. } = &e.event && own(&e.event) {
                text.push_str(delta);
                yield event("response.output_text.delta", json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []}));
            }
        }
        let stored = stream_state.store.load(&stream_run).await.ok().flatten();
        let outcome = Outcome::of(stored.as_ref());
        if let Outcome::Failed(why) = &outcome {
            let mut failed = response_body(&id, &model, created, "failed", None, None, &stream_run);
            failed["error"] = json!({"code": "server_error", "message": format!("run `{stream_run}` failed: {why}")});
            yield event("response.failed", json!({"response": failed}));
            return;
        }
        if !matches!(outcome, Outcome::Answered(_)) || text.is_empty() {
            let shown = stream_state.redact(Value::String(outcome.text().to_owned()));
            let shown = shown.as_str().unwrap_or_default().to_owned();
            let delta = if text.is_empty() { shown } else { format!("\n\n{shown}") };
            text.push_str(&delta);
            yield event("response.output_text.delta", json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []}));
        }
        yield event("response.output_text.done", json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}));
        yield event("response.content_part.done", json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}));
        yield event("response.output_item.done", json!({"output_index": 0, "item": {"type": "message", "id": item_id, "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}}));
        let usage = stored.map(|s| s.snapshot.usage).unwrap_or_default();
        yield event("response.completed", json!({"response": response_body(&id, &model, created, "completed", Some(&text), Some(&usage), &stream_run)}));
    };
    with_run_id(
        Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response(),
        &run_id,
    )
}
