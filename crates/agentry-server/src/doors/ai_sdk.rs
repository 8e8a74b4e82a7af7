//! The Vercel AI SDK door: the UI message stream protocol (v1) that `useChat` and the AI SDK's
//! `DefaultChatTransport` speak. `POST /v1/ui/{agent}` takes the chat as the transport sends it
//! (`{id, messages, trigger, messageId}`); the chat id is the run's session, so the agent keeps
//! the conversation. A new user message starts a run; an assistant message whose tool parts
//! carry approval responses (`addToolApprovalResponse`) decides the paused run of the chat and
//! goes on with it. `GET /v1/ui/{agent}/{chat}/stream` replays the chat's run under way
//! (`resumeStream`), or answers 204 when none is.
//!
//! The stream: text and reasoning parts, tool calls with their input and output, approval
//! requests, steps, and `data-agentry-*` parts for what agentry adds: hook decisions, state
//! patches, and sub-agents (their text and tool calls, by agent path).

use super::{content_text, own};
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::hub::{HubEvent, RunHub};
use crate::state::AppState;
use agentry::{Decision, RunEvent, RunQuery, StopReason};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What the transport posts.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatBody {
    id: String,
    #[serde(default)]
    messages: Vec<UiMessage>,
}

#[derive(Debug, Deserialize)]
struct UiMessage {
    #[serde(default)]
    id: String,
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
}

/// `POST /v1/ui/{agent}`.
pub(crate) async fn chat(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    JsonBody(body): JsonBody<ChatBody>,
) -> Result<Response, ApiError> {
    let served = state.agent(Some(&agent))?.clone();
    let Some(last) = body.messages.last() else {
        return Err(ApiError::bad_request(
            "`messages` is empty: send the chat's messages",
        ));
    };
    let session = body.id.clone();
    let (run_id, hub, message_id) = match last.role.as_str() {
        "user" => {
            let input = last
                .parts
                .iter()
                .filter(|p| p["type"] == "text")
                .map(|p| content_text(&p["text"]))
                .collect::<Vec<_>>()
                .join("\n");
            let media = super::media::media_parts(&Value::Array(last.parts.clone()))
                .map_err(|e| ApiError::bad_request(format!("the last user message: {e}")))?;
            if input.trim().is_empty() && media.is_empty() {
                return Err(ApiError::bad_request("the last user message has no text"));
            }
            let input = super::media::with_media(media, input);
            let started =
                super::start(&state, &served, input, Some(session), state.options.clone()).await?;
            let message_id = format!("msg-{}", started.run_id);
            (started.run_id, started.hub, message_id)
        }
        "assistant" => {
            let decisions = approval_responses(&last.parts);
            if decisions.is_empty() {
                return Err(ApiError::bad_request(
                    "the last message is the assistant's and answers no approval request: send a user message, or approval responses",
                ));
            }
            let paused = state.paused_in(&session, "chat").await?;
            let hub = state.go_on(&paused, decisions).await?;
            (paused.snapshot.run_id, hub, last.id.clone())
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "cannot answer a `{other}` message"
            )));
        }
    };
    Ok(stream_response(&state, &run_id, hub, message_id))
}

/// `GET /v1/ui/{agent}/{chat}/stream`: the chat's run under way, from its start; 204 when none.
pub(crate) async fn resume_stream(
    State(state): State<AppState>,
    Path((agent, chat)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    state.agent(Some(&agent))?;
    let latest = state
        .store
        .list(&RunQuery::session(chat).limit(1))
        .await?
        .into_iter()
        .next();
    let live = latest.and_then(|run| {
        let hub = state.hubs.get(&run.run_id).filter(|h| !h.is_done())?;
        Some((run.run_id, hub))
    });
    Ok(match live {
        Some((run_id, hub)) => {
            let message_id = format!("msg-{run_id}");
            stream_response(&state, &run_id, hub, message_id)
        }
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

/// The decisions an assistant message's tool parts answer (`state: "approval-responded"`).
fn approval_responses(parts: &[Value]) -> Vec<Decision> {
    parts
        .iter()
        .filter(|p| p["state"] == "approval-responded")
        .filter_map(|p| {
            let approval = &p["approval"];
            let id = approval["id"].as_str()?;
            Some(if approval["approved"] == true {
                Decision::approve(id)
            } else {
                let reason = approval["reason"].as_str().unwrap_or("the user denied it");
                Decision::reject(id, reason)
            })
        })
        .collect()
}

fn stream_response(
    state: &AppState,
    run_id: &str,
    hub: Arc<RunHub>,
    message_id: String,
) -> Response {
    let events = super::live(state, hub);
    let (state, run_id) = (state.clone(), run_id.to_owned());
    let body = async_stream::stream! {
        let mut writer = UiWriter::default();
        let sse = |chunk: &Value| Ok::<_, std::convert::Infallible>(format!("data: {chunk}\n\n"));
        yield sse(&json!({"type": "start", "messageId": message_id, "messageMetadata": {"runId": run_id}}));
        futures::pin_mut!(events);
        while let Some(e) = events.next().await {
            for chunk in writer.chunks(&e) {
                yield sse(&chunk);
            }
        }
        let ended = state.store.load(&run_id).await.ok().flatten();
        // The error comes from the store: masked as events are.
        for chunk in writer.finish(ended.as_ref().and_then(|s| s.snapshot.error.as_deref())) {
            yield sse(&state.redact(chunk));
        }
        yield Ok("data: [DONE]\n\n".to_owned());
    };
    let mut response = axum::body::Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "x-vercel-ai-ui-message-stream",
        HeaderValue::from_static("v1"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Turns run events into UI message chunks, opening and closing text and reasoning parts.
#[derive(Default)]
struct UiWriter {
    text: Option<String>,
    reasoning: Option<String>,
    parts: u32,
    /// Each sub-agent's text so far, by agent path (its data part is replaced as it grows).
    sub_text: HashMap<String, String>,
    /// Tool calls whose input was sent.
    tools: std::collections::HashSet<String>,
    finish: Option<&'static str>,
}

impl UiWriter {
    fn next_id(&mut self, kind: &str) -> String {
        self.parts += 1;
        format!("{kind}-{}", self.parts)
    }

    fn close(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
        out
    }

    fn tool_input(&mut self, call_id: &str, name: &str, input: &Value, path: &str) -> Vec<Value> {
        if !self.tools.insert(call_id.to_owned()) {
            return Vec::new();
        }
        let mut chunk = json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": input});
        if path.contains('/') {
            chunk["dynamic"] = json!(true);
            chunk["title"] = json!(format!("{path}: {name}"));
        }
        vec![chunk]
    }

    fn chunks(&mut self, e: &HubEvent) -> Vec<Value> {
        let path = e.event.agent_path();
        if !own(&e.event) {
            return self.sub_agent(&e.event, path);
        }
        match &e.event {
            RunEvent::StepStarted { .. } => vec![json!({"type": "start-step"})],
            RunEvent::StepFinished { .. } => {
                let mut out = self.close();
                out.push(json!({"type": "finish-step"}));
                out
            }
            RunEvent::TextDelta { text, .. } => {
                let mut out = Vec::new();
                if let Some(id) = self.reasoning.take() {
                    out.push(json!({"type": "reasoning-end", "id": id}));
                }
                let id = match &self.text {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.next_id("text");
                        out.push(json!({"type": "text-start", "id": id}));
                        self.text = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "text-delta", "id": id, "delta": text}));
                out
            }
            RunEvent::ThinkingDelta { text, .. } => {
                let mut out = Vec::new();
                if let Some(id) = self.text.take() {
                    out.push(json!({"type": "text-end", "id": id}));
                }
                let id = match &self.reasoning {
                    Some(id) => id.clone(),
                    None => {
                        let id = self.next_id("reasoning");
                        out.push(json!({"type": "reasoning-start", "id": id}));
                        self.reasoning = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "reasoning-delta", "id": id, "delta": text}));
                out
            }
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                ..
            } => {
                let mut out = self.close();
                out.extend(self.tool_input(call_id, name, input, path));
                out
            }
            RunEvent::ToolFinished { result, .. } => {
                let mut out = self.close();
                if result.is_error {
                    out.push(json!({"type": "tool-output-error", "toolCallId": result.call_id, "errorText": result.content.describe()}));
                } else {
                    out.push(json!({"type": "tool-output-available", "toolCallId": result.call_id, "output": result.content}));
                }
                out
            }
            RunEvent::AwaitingApproval { pending, .. } => {
                let mut out = self.close();
                for p in pending {
                    out.extend(self.tool_input(&p.call_id, &p.tool, &p.input, path));
                    out.push(json!({"type": "tool-approval-request", "approvalId": p.call_id, "toolCallId": p.call_id, "reason": p.reason}));
                }
                self.finish = Some("tool-calls");
                out
            }
            RunEvent::ApprovalResolved { decision, .. } if !decision.is_approved() => {
                vec![json!({"type": "tool-output-denied", "toolCallId": decision.call_id()})]
            }
            RunEvent::HookDecision {
                hook,
                event,
                decision,
                call_id,
                tool,
                detail,
                ..
            } => {
                vec![
                    json!({"type": "data-agentry-hook", "data": {"hook": hook, "event": event, "decision": decision, "toolCallId": call_id, "tool": tool, "detail": detail}}),
                ]
            }
            RunEvent::StatePatch { patch, source, .. } => {
                vec![
                    json!({"type": "data-agentry-state", "data": {"patch": patch, "source": source}}),
                ]
            }
            RunEvent::RunFinished { stop, .. } => {
                self.finish = Some(match stop {
                    StopReason::AwaitingApproval { .. } => "tool-calls",
                    StopReason::FinalAnswer | StopReason::Recovered { .. } => "stop",
                    _ => "other",
                });
                self.close()
            }
            RunEvent::RunFailed { error, .. } => {
                self.finish = Some("error");
                let mut out = self.close();
                out.push(json!({"type": "error", "errorText": error}));
                out
            }
            _ => Vec::new(),
        }
    }

    /// A sub-agent's events: its text as a data part that grows (one per agent path), its tool
    /// calls as dynamic tool parts titled with its path.
    fn sub_agent(&mut self, event: &RunEvent, path: &str) -> Vec<Value> {
        match event {
            RunEvent::TextDelta { text, .. } => {
                // One part per run of the sub-agent (calls of it share its path, not a run).
                let run = event.sub_agent_run();
                let id = super::sub_agent_key(event).into_owned();
                let so_far = self.sub_text.entry(id.clone()).or_default();
                so_far.push_str(text);
                vec![
                    json!({"type": "data-agentry-subagent", "id": id, "data": {"agentPath": path, "runId": run, "text": so_far}}),
                ]
            }
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                ..
            } => self.tool_input(call_id, name, input, path),
            RunEvent::ToolFinished { result, .. } => {
                let key = if result.is_error {
                    "errorText"
                } else {
                    "output"
                };
                let kind = if result.is_error {
                    "tool-output-error"
                } else {
                    "tool-output-available"
                };
                // An error's text is a string; an output is any JSON (media by reference).
                let value = match result.is_error {
                    true => json!(result.content.describe()),
                    false => json!(result.content),
                };
                vec![
                    json!({"type": kind, "toolCallId": result.call_id, key: value, "dynamic": true}),
                ]
            }
            _ => Vec::new(),
        }
    }

    /// The chunks that end the message: an error when the run failed, and `finish`.
    fn finish(&mut self, error: Option<&str>) -> Vec<Value> {
        let mut out = self.close();
        if let (Some(error), None) = (error, self.finish) {
            out.push(json!({"type": "error", "errorText": error}));
            self.finish = Some("error");
        }
        out.push(json!({"type": "finish", "finishReason": self.finish.unwrap_or("other")}));
        out
    }
}
