//! The A2A door (Agent2Agent, protocol 1.0 over JSON-RPC, and 0.3 beside it): each agent has an
//! agent card at `/a2a/{agent}/.well-known/agent-card.json` (the default agent's also at
//! `/.well-known/agent-card.json`) and answers `SendMessage`, `SendStreamingMessage`,
//! `GetTask` and `CancelTask` at `/a2a/{agent}`, and 0.3's `message/send`, `message/stream`,
//! `tasks/get` and `tasks/cancel` there too ([`v0_3`]). A task is a run; its context id is the run's
//! session, so messages of one context continue one conversation. A run paused for approval is
//! a task in `TASK_STATE_INPUT_REQUIRED`: a message to that task answers it (a data part
//! `{"approved": true}` or `{"approved": false, "reason": "..."}`, or the text `approve` /
//! anything else as the reason to reject), and the run goes on.

use super::{content_text, own};
use crate::agents::ServedAgent;
use crate::hub::RunHub;
use crate::state::AppState;
use agentry::{Decision, Role, RunEvent, RunStatus, StopReason, StoredRun};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;

mod v0_3;

const TASK_NOT_FOUND: i64 = -32001;
const TASK_NOT_CANCELABLE: i64 = -32002;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_REQUEST: i64 = -32600;
const INTERNAL: i64 = -32603;

/// A JSON-RPC error.
struct RpcError(i64, String);

fn rpc_error(id: &Value, e: RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.0, "message": e.1}})
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The card of `agent`, whose endpoint is at `base` (`bearer`: calls need the server's token),
/// for a client of protocol 1.0 or later (`current`), else of 0.3. It lists both interfaces,
/// and 0.3's fields (`url`, `protocolVersion`, `preferredTransport`), which 1.0 clients ignore;
/// only the security schemes take one version's shape, since both name them `securitySchemes`.
fn card(agent: &Arc<dyn ServedAgent>, base: &str, bearer: bool, current: bool) -> Value {
    let name = agent.name();
    let description = agent
        .description()
        .map_or_else(|| format!("The agentry agent `{name}`."), str::to_owned);
    let mut card = json!({
        "name": name,
        "description": description,
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/a2a/{name}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/a2a/{name}"), "protocolBinding": "JSONRPC", "protocolVersion": v0_3::VERSION},
        ],
        "url": format!("{base}/a2a/{name}"),
        "protocolVersion": v0_3::VERSION,
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{"id": name, "name": name, "description": description, "tags": ["agentry"]}],
    });
    if bearer && current {
        card["securitySchemes"] =
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    } else if bearer {
        card["securitySchemes"] = json!({"bearer": {"type": "http", "scheme": "bearer"}});
        card["security"] = json!([{"bearer": []}]);
    }
    card
}

/// True when the request states protocol 1.0 or later (`A2A-Version`); a request without it is
/// of 0.3, as the 1.0 specification says.
fn current_version(headers: &HeaderMap) -> bool {
    headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split('.').next()?.parse::<u32>().ok())
        .is_some_and(|major| major >= 1)
}

/// The server's base URL as the request addressed it.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .filter(|p| *p == "https")
        .unwrap_or("http");
    format!("{scheme}://{host}")
}

/// `GET /a2a/{agent}/.well-known/agent-card.json`.
pub(crate) async fn agent_card(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, crate::error::ApiError> {
    let served = state.agent(Some(&agent))?;
    Ok(Json(card(
        served,
        &base_url(&headers),
        state.token_required,
        current_version(&headers),
    )))
}

/// `GET /.well-known/agent-card.json`: the default agent's card.
pub(crate) async fn default_card(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, crate::error::ApiError> {
    let served = state.agent(None)?;
    Ok(Json(card(
        served,
        &base_url(&headers),
        state.token_required,
        current_version(&headers),
    )))
}

/// `POST /a2a/{agent}`: a JSON-RPC request.
pub(crate) async fn rpc(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    crate::extract::JsonBody(request): crate::extract::JsonBody<Value>,
) -> Response {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(served) = state.agents.get(&agent).cloned() else {
        return Json(rpc_error(
            &id,
            RpcError(
                METHOD_NOT_FOUND,
                format!("no agent `{agent}` is served here"),
            ),
        ))
        .into_response();
    };
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return Json(rpc_error(
            &id,
            RpcError(
                INVALID_REQUEST,
                "a JSON-RPC 2.0 request needs a `method`".into(),
            ),
        ))
        .into_response();
    };
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let (method, legacy, params) = match v0_3::method(method) {
        Some(current) => (current, true, v0_3::params(params)),
        None => (method, false, params),
    };
    let outcome = match method {
        "SendMessage" => send(&state, &served, &params, false).await,
        "SendStreamingMessage" => send(&state, &served, &params, true).await,
        "GetTask" => get_task(&state, &params).await.map(Sent::Now),
        "CancelTask" => cancel_task(&state, &params).await.map(Sent::Now),
        other => Err(RpcError(
            METHOD_NOT_FOUND,
            format!(
                "`{other}` is not a method of this agent (SendMessage, SendStreamingMessage, GetTask, CancelTask; in 0.3: message/send, message/stream, tasks/get, tasks/cancel)"
            ),
        )),
    };
    match outcome {
        Ok(Sent::Now(result)) => {
            let result = match legacy {
                true => v0_3::result(method, result),
                false => result,
            };
            Json(rpc_result(&id, state.redact(result))).into_response()
        }
        Ok(Sent::Streaming(run_id, hub, context)) => {
            stream(&state, id, run_id, context, hub, legacy)
        }
        Err(e) if method == "SendStreamingMessage" => {
            let event = Event::default().data(rpc_error(&id, e).to_string());
            Sse::new(futures::stream::iter([Ok::<_, std::convert::Infallible>(
                event,
            )]))
            .into_response()
        }
        Err(e) => Json(rpc_error(&id, e)).into_response(),
    }
}

enum Sent {
    Now(Value),
    Streaming(String, Arc<RunHub>, String),
}

fn task_id(params: &Value) -> Result<&str, RpcError> {
    params["id"]
        .as_str()
        .ok_or_else(|| RpcError(INVALID_PARAMS, "`id` (the task id) is missing".into()))
}

async fn load(state: &AppState, run_id: &str) -> Result<StoredRun, RpcError> {
    state.load(run_id).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::NOT_FOUND {
            RpcError(TASK_NOT_FOUND, format!("no task `{run_id}`"))
        } else {
            RpcError(INTERNAL, e.message().to_owned())
        }
    })
}

async fn get_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let stored = load(state, task_id(params)?).await?;
    Ok(task(&stored))
}

async fn cancel_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let run_id = task_id(params)?;
    // A run this process drives is cancelled here, whether or not it reached the store yet.
    if let Some(hub) = state.hubs.get(run_id).filter(|h| !h.is_done()) {
        hub.cancel();
        super::ended(state, &hub).await;
        return Ok(task(&load(state, run_id).await?));
    }
    let stored = load(state, run_id).await?;
    match stored.snapshot.status() {
        RunStatus::Running => {
            state
                .store
                .request_cancel(run_id)
                .await
                .map_err(|e| RpcError(INTERNAL, e.to_string()))?;
        }
        RunStatus::AwaitingApproval => {
            state
                .runtime
                .cancel_paused(run_id)
                .await
                .map_err(|e| RpcError(INTERNAL, e.to_string()))?;
        }
        other => {
            return Err(RpcError(
                TASK_NOT_CANCELABLE,
                format!("task `{run_id}` is {other}: it cannot be canceled"),
            ));
        }
    }
    Ok(task(&load(state, run_id).await?))
}

/// The text of a message's text parts.
fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.get("text").map(content_text))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The decisions a message to a task waiting for input gives: a data part `{"approved": ..}`,
/// or the text (`approve`, `approved`, `yes`: approve; anything else: the reason to reject).
fn decisions(message: &Value, pending: &[agentry::PendingApproval]) -> Vec<Decision> {
    let data = message["parts"].as_array().and_then(|parts| {
        parts
            .iter()
            .find_map(|p| p.get("data").filter(|d| d.get("approved").is_some()))
    });
    let (approved, reason) = match data {
        Some(d) => (
            d["approved"] == true,
            d["reason"]
                .as_str()
                .unwrap_or("rejected by the calling agent")
                .to_owned(),
        ),
        None => {
            let text = message_text(message);
            let word = text.trim().trim_end_matches(['.', '!']).to_lowercase();
            (
                matches!(word.as_str(), "approve" | "approved" | "yes" | "y" | "ok"),
                text,
            )
        }
    };
    pending
        .iter()
        .map(|p| {
            if approved {
                Decision::approve(&p.call_id)
            } else {
                Decision::reject(&p.call_id, &reason)
            }
        })
        .collect()
}

async fn send(
    state: &AppState,
    agent: &Arc<dyn ServedAgent>,
    params: &Value,
    streaming: bool,
) -> Result<Sent, RpcError> {
    let message = &params["message"];
    if !message.is_object() {
        return Err(RpcError(INVALID_PARAMS, "`message` is missing".into()));
    }
    let (run_id, hub, context) = match message["taskId"].as_str().filter(|t| !t.is_empty()) {
        Some(task) => {
            let stored = load(state, task).await?;
            let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop else {
                return Err(RpcError(
                    INVALID_PARAMS,
                    format!(
                        "task `{task}` is {} and waits for no input; send a message without a taskId to start a new one",
                        stored.snapshot.status()
                    ),
                ));
            };
            let decisions = decisions(message, pending);
            let hub = state
                .go_on(&stored, decisions)
                .await
                .map_err(|e| RpcError(INVALID_PARAMS, e.message().to_owned()))?;
            (
                task.to_owned(),
                hub,
                stored.snapshot.session_id.unwrap_or_default(),
            )
        }
        None => {
            let input = message_text(message);
            let media = super::media::media_parts(&message["parts"])
                .map_err(|e| RpcError(INVALID_PARAMS, format!("the message's {e}")))?;
            if input.trim().is_empty() && media.is_empty() {
                return Err(RpcError(
                    INVALID_PARAMS,
                    "the message has no text part".into(),
                ));
            }
            let input = super::media::with_media(media, input);
            let context = message["contextId"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
            let started = super::start(
                state,
                agent,
                input,
                Some(context.clone()),
                state.options.clone(),
            )
            .await
            .map_err(|e| RpcError(INTERNAL, e.message().to_owned()))?;
            (started.run_id, started.hub, context)
        }
    };
    if streaming {
        return Ok(Sent::Streaming(run_id, hub, context));
    }
    if params["configuration"]["returnImmediately"] == true {
        // Under way (and in the store).
        let status = json!({"state": "TASK_STATE_WORKING"});
        return Ok(Sent::Now(
            json!({"task": {"id": run_id, "contextId": context, "status": status}}),
        ));
    }
    super::ended(state, &hub).await;
    Ok(Sent::Now(
        json!({"task": task(&load(state, &run_id).await?)}),
    ))
}

fn agent_message(task_id: &str, context: &str, id: String, parts: Vec<Value>) -> Value {
    json!({"messageId": id, "role": "ROLE_AGENT", "taskId": task_id, "contextId": context, "parts": parts})
}

/// The task a stored run is.
fn task(stored: &StoredRun) -> Value {
    let s = &stored.snapshot;
    let context = s.session_id.clone().unwrap_or_default();
    let (state, text, extra) = match (&s.error, &s.stop) {
        (Some(error), _) => (
            "TASK_STATE_FAILED",
            format!("The run failed: {error}"),
            None,
        ),
        (None, None) => ("TASK_STATE_WORKING", String::new(), None),
        (None, Some(StopReason::AwaitingApproval { pending })) => {
            let calls: Vec<String> = pending
                .iter()
                .map(|p| format!("`{}` ({}): {}", p.tool, p.call_id, p.reason))
                .collect();
            (
                "TASK_STATE_INPUT_REQUIRED",
                format!(
                    "Approval needed for {}. Reply `approve`, or say why not.",
                    calls.join("; ")
                ),
                Some(json!({"data": {"pending": pending}})),
            )
        }
        (None, Some(StopReason::Cancelled)) => (
            "TASK_STATE_CANCELED",
            "The run was cancelled.".to_owned(),
            None,
        ),
        (None, Some(StopReason::FinalAnswer | StopReason::Recovered { .. })) => {
            ("TASK_STATE_COMPLETED", String::new(), None)
        }
        (None, Some(stop)) => (
            "TASK_STATE_COMPLETED",
            format!("The run stopped: {stop}."),
            None,
        ),
    };
    let mut status = json!({"state": state});
    if !text.is_empty() {
        let mut parts = vec![json!({"text": text})];
        parts.extend(extra);
        status["message"] =
            agent_message(&s.run_id, &context, format!("status-{}", s.run_id), parts);
    }
    let artifacts: Vec<Value> = match &s.output {
        Some(Value::String(answer)) => {
            vec![json!({"artifactId": "answer", "name": "answer", "parts": [{"text": answer}]})]
        }
        Some(Value::Null) | None => Vec::new(),
        Some(other) => {
            vec![json!({"artifactId": "answer", "name": "answer", "parts": [{"data": other}]})]
        }
    };
    let history: Vec<Value> = s
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m.role(), Role::User | Role::Assistant) && !m.text().is_empty())
        .map(|(i, m)| {
            let role = if m.role() == Role::User { "ROLE_USER" } else { "ROLE_AGENT" };
            json!({"messageId": format!("{}-{i}", s.run_id), "role": role, "taskId": s.run_id, "contextId": context, "parts": [{"text": m.text()}]})
        })
        .collect();
    json!({"id": s.run_id, "contextId": context, "status": status, "artifacts": artifacts, "history": history})
}

/// The stream of a task: the task, its text as artifact chunks, its tool calls and hook
/// decisions as status updates, and its final status (in 0.3's shapes when `legacy`).
fn stream(
    state: &AppState,
    id: Value,
    run_id: String,
    context: String,
    hub: Arc<RunHub>,
    legacy: bool,
) -> Response {
    let events = super::live(state, hub);
    let state = state.clone();
    let body = async_stream::stream! {
        let out = |result: Value| {
            let result = match legacy {
                true => v0_3::stream_result(result),
                false => result,
            };
            Ok::<_, std::convert::Infallible>(Event::default().data(rpc_result(&id, state.redact(result)).to_string()))
        };
        yield out(json!({"task": {"id": run_id, "contextId": context, "status": {"state": "TASK_STATE_WORKING"}}}));
        let mut block = 0u32;
        let mut open = false;
        futures::pin_mut!(events);
        while let Some(e) = events.next().await {
            match &e.event {
                RunEvent::TextDelta { text, .. } if own(&e.event) => {
                    if !open {
                        block += 1;
                    }
                    yield out(json!({"artifactUpdate": {"taskId": run_id, "contextId": context, "append": open, "lastChunk": false,
                        "artifact": {"artifactId": format!("text-{block}"), "parts": [{"text": text}]}}}));
                    open = true;
                }
                RunEvent::ToolStarted { .. } | RunEvent::ToolFinished { .. } | RunEvent::HookDecision { .. } | RunEvent::ApprovalResolved { .. } => {
                    if open {
                        yield out(json!({"artifactUpdate": {"taskId": run_id, "contextId": context, "append": true, "lastChunk": true,
                            "artifact": {"artifactId": format!("text-{block}"), "parts": []}}}));
                        open = false;
                    }
                    let data = serde_json::to_value(&e.event).unwrap_or_default();
                    yield out(json!({"statusUpdate": {"taskId": run_id, "contextId": context, "status": {"state": "TASK_STATE_WORKING",
                        "message": agent_message(&run_id, &context, format!("event-{}", e.id), vec![json!({"data": data})])}}}));
                }
                _ => {}
            }
        }
        if open {
            yield out(json!({"artifactUpdate": {"taskId": run_id, "contextId": context, "append": true, "lastChunk": true,
                "artifact": {"artifactId": format!("text-{block}"), "parts": []}}}));
        }
        match state.store.load(&run_id).await {
            Ok(Some(stored)) => {
                let task = task(&stored);
                for artifact in task["artifacts"].as_array().into_iter().flatten() {
                    yield out(json!({"artifactUpdate": {"taskId": run_id, "contextId": context, "append": false, "lastChunk": true, "artifact": artifact}}));
                }
                yield out(json!({"statusUpdate": {"taskId": run_id, "contextId": context, "status": task["status"]}}));
            }
            _ => {
                yield out(json!({"statusUpdate": {"taskId": run_id, "contextId": context, "status": {"state": "TASK_STATE_FAILED"}}}));
            }
        }
    };
    Sse::new(body)
        .keep_alive(KeepAlive::default())
        .into_response()
}
