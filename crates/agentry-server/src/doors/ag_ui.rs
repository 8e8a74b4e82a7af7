//! The AG-UI door: `POST /v1/ag-ui/{agent}` takes a `RunAgentInput` and streams AG-UI events
//! (Server-Sent Events of JSON). The thread id is the run's session. A run paused for approval
//! ends its AG-UI run with an `interrupt` outcome, one interrupt per pending call (its id is
//! the call id); the next AG-UI run answers them with `resume` entries (`status: "resolved"`
//! with `payload: {"approved": true}` or `{"approved": false, "reason": "..."}`, or
//! `"cancelled"`), and the paused run goes on. Text, reasoning, tool calls and results, steps,
//! state (`STATE_DELTA` from agentry's JSON Patch state stream, `STATE_SNAPSHOT` at the end),
//! sub-agents (`SUBAGENT_STARTED`/`FINISHED`, their events attributed by `subagentRunId`) and
//! hook decisions (`CUSTOM` `agentry.hook_decision`).

use super::{content_text, own};
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::hub::HubEvent;
use crate::state::AppState;
use agentry::{Decision, RunEvent, StopReason};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// The part of a `RunAgentInput` agentry reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    messages: Vec<Value>,
    #[serde(default)]
    resume: Vec<ResumeEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResumeEntry {
    interrupt_id: String,
    status: String,
    #[serde(default)]
    payload: Value,
}

impl ResumeEntry {
    fn decision(&self) -> Decision {
        let reason = self.payload["reason"].as_str();
        match (self.status.as_str(), &self.payload["approved"]) {
            ("resolved", Value::Bool(true)) => Decision::approve(&self.interrupt_id),
            ("cancelled", _) => Decision::reject(
                &self.interrupt_id,
                reason.unwrap_or("the request was cancelled"),
            ),
            _ => Decision::reject(&self.interrupt_id, reason.unwrap_or("the user denied it")),
        }
    }
}

/// `POST /v1/ag-ui/{agent}`.
pub(crate) async fn run(
    State(state): State<AppState>,
    Path(agent): Path<String>,
    JsonBody(input): JsonBody<RunAgentInput>,
) -> Result<Response, ApiError> {
    let served = state.agent(Some(&agent))?.clone();
    let (run_id, hub, initial) = if input.resume.is_empty() {
        let last_user = input.messages.iter().rev().find(|m| m["role"] == "user");
        let text = last_user
            .map(|m| content_text(&m["content"]))
            .unwrap_or_default();
        let media = last_user
            .map_or(Ok(Vec::new()), |m| super::media::media_parts(&m["content"]))
            .map_err(|e| ApiError::bad_request(format!("the last user message: {e}")))?;
        if text.trim().is_empty() && media.is_empty() {
            return Err(ApiError::bad_request(
                "`messages` holds no user message to answer",
            ));
        }
        let text = super::media::with_media(media, text);
        let started = super::start(
            &state,
            &served,
            text,
            Some(input.thread_id.clone()),
            state.options.clone(),
        )
        .await?;
        (started.run_id, started.hub, served.initial_state())
    } else {
        let paused = state.paused_in(&input.thread_id, "thread").await?;
        let decisions: Vec<Decision> = input.resume.iter().map(ResumeEntry::decision).collect();
        let hub = state.go_on(&paused, decisions).await?;
        let state_now = paused.snapshot.state.clone();
        (paused.snapshot.run_id, hub, state_now)
    };
    let events = super::live(&state, hub);
    let (thread, client_run) = (input.thread_id, input.run_id);
    let body = async_stream::stream! {
        let sse = |event: &Value| Ok::<_, std::convert::Infallible>(format!("data: {event}\n\n"));
        let mut writer = AgUiWriter::new(&thread, &client_run);
        yield sse(&json!({"type": "RUN_STARTED", "threadId": thread, "runId": client_run}));
        if !initial.is_null() {
            yield sse(&state.redact(json!({"type": "STATE_SNAPSHOT", "snapshot": initial})));
        }
        futures::pin_mut!(events);
        while let Some(e) = events.next().await {
            for event in writer.events(&e) {
                yield sse(&event);
            }
        }
        let stored = state.store.load(&run_id).await.ok().flatten();
        // What comes from the store (the result, the state, an error) is masked as events are.
        for event in writer.finish(stored.as_ref()) {
            yield sse(&state.redact(event));
        }
    };
    let mut response = axum::body::Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// What is open for one agent of the run (the run's own, or a sub-agent's).
#[derive(Default)]
struct Open {
    text: Option<String>,
    reasoning: Option<String>,
}

/// Turns run events into AG-UI events, keeping messages, tool calls and sub-agents well nested.
struct AgUiWriter {
    thread: String,
    run: String,
    parts: u32,
    /// By agent path ("" for the run's own).
    open: HashMap<String, Open>,
    /// Running sub-agents: agent path to its subagent run id.
    subagents: HashMap<String, String>,
    tools: HashSet<String>,
    /// Steps of the run's own opened in this AG-UI run and not finished.
    steps: Vec<String>,
    ended: bool,
}

impl AgUiWriter {
    fn new(thread: &str, run: &str) -> Self {
        AgUiWriter {
            thread: thread.to_owned(),
            run: run.to_owned(),
            parts: 0,
            open: HashMap::new(),
            subagents: HashMap::new(),
            tools: HashSet::new(),
            steps: Vec::new(),
            ended: false,
        }
    }

    fn next_id(&mut self, kind: &str) -> String {
        self.parts += 1;
        format!("{kind}-{}-{}", self.run, self.parts)
    }

    /// The subagent run id to attribute an event of `path` to (`None` for the run's own).
    fn attribution(&self, path: &str) -> Option<String> {
        self.subagents.get(path).cloned()
    }

    fn attributed(&self, mut event: Value, path: &str) -> Value {
        if let Some(id) = self.attribution(path) {
            event["subagentRunId"] = json!(id);
        }
        event
    }

    fn close(&mut self, path: &str) -> Vec<Value> {
        let open = std::mem::take(self.open.entry(path.to_owned()).or_default());
        let mut out = Vec::new();
        if let Some(id) = open.text {
            out.push(self.attributed(json!({"type": "TEXT_MESSAGE_END", "messageId": id}), path));
        }
        if let Some(id) = open.reasoning {
            out.push(self.attributed(
                json!({"type": "REASONING_MESSAGE_END", "messageId": id}),
                path,
            ));
            out.push(self.attributed(json!({"type": "REASONING_END", "messageId": id}), path));
        }
        out
    }

    fn tool_call(&mut self, call_id: &str, name: &str, input: &Value, path: &str) -> Vec<Value> {
        if !self.tools.insert(call_id.to_owned()) {
            return Vec::new();
        }
        let mut out = self.close(path);
        out.push(self.attributed(
            json!({"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}),
            path,
        ));
        out.push(self.attributed(
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": input.to_string()}),
            path,
        ));
        out.push(self.attributed(
            json!({"type": "TOOL_CALL_END", "toolCallId": call_id}),
            path,
        ));
        out
    }

    fn events(&mut self, e: &HubEvent) -> Vec<Value> {
        let full_path = e.event.agent_path();
        // Events of the run itself are keyed "", a sub-agent's by its run (calls of one
        // sub-agent at once share a path), or by its path in a history recorded before events
        // named their run.
        let key = match own(&e.event) {
            true => std::borrow::Cow::Borrowed(""),
            false => super::sub_agent_key(&e.event),
        };
        let path = &*key;
        let mut out = Vec::new();
        if !path.is_empty() && !self.subagents.contains_key(path) {
            if let RunEvent::RunStarted { run_id, .. } = &e.event {
                let name = full_path.rsplit('/').next().unwrap_or(full_path);
                out.push(
                    json!({"type": "SUBAGENT_STARTED", "subagentRunId": run_id, "name": name}),
                );
                self.subagents.insert(path.to_owned(), run_id.clone());
            }
            return out;
        }
        match &e.event {
            RunEvent::StepStarted { step, .. } if path.is_empty() => {
                let name = format!("step {step}");
                out.push(json!({"type": "STEP_STARTED", "stepName": name}));
                self.steps.push(name);
            }
            RunEvent::StepFinished { step, .. } if path.is_empty() => {
                out.extend(self.close(path));
                // A step that began before a pause finishes in the run that resumed it, where
                // it was never opened: only steps opened here are finished here.
                let name = format!("step {step}");
                if let Some(at) = self.steps.iter().position(|s| *s == name) {
                    self.steps.remove(at);
                    out.push(json!({"type": "STEP_FINISHED", "stepName": name}));
                }
            }
            RunEvent::TextDelta { text, .. } => {
                let open = self.open.entry(path.to_owned()).or_default();
                if let Some(id) = open.reasoning.take() {
                    out.push(self.attributed(
                        json!({"type": "REASONING_MESSAGE_END", "messageId": id}),
                        path,
                    ));
                    out.push(
                        self.attributed(json!({"type": "REASONING_END", "messageId": id}), path),
                    );
                }
                let id = match self.open.get(path).and_then(|o| o.text.clone()) {
                    Some(id) => id,
                    None => {
                        let id = self.next_id("msg");
                        out.push(self.attributed(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}), path));
                        self.open.entry(path.to_owned()).or_default().text = Some(id.clone());
                        id
                    }
                };
                out.push(self.attributed(
                    json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": text}),
                    path,
                ));
            }
            RunEvent::ThinkingDelta { text, .. } => {
                let open = self.open.entry(path.to_owned()).or_default();
                if let Some(id) = open.text.take() {
                    out.push(
                        self.attributed(json!({"type": "TEXT_MESSAGE_END", "messageId": id}), path),
                    );
                }
                let id = match self.open.get(path).and_then(|o| o.reasoning.clone()) {
                    Some(id) => id,
                    None => {
                        let id = self.next_id("reasoning");
                        out.push(
                            self.attributed(
                                json!({"type": "REASONING_START", "messageId": id}),
                                path,
                            ),
                        );
                        out.push(self.attributed(json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}), path));
                        self.open.entry(path.to_owned()).or_default().reasoning = Some(id.clone());
                        id
                    }
                };
                out.push(self.attributed(
                    json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": text}),
                    path,
                ));
            }
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                ..
            } => {
                out.extend(self.tool_call(call_id, name, input, path));
            }
            RunEvent::ToolFinished { result, .. } => {
                out.extend(self.close(path));
                out.push(self.attributed(json!({
                    "type": "TOOL_CALL_RESULT", "messageId": format!("result-{}", result.call_id),
                    "toolCallId": result.call_id, "content": result.content.describe(), "role": "tool",
                }), path));
            }
            RunEvent::AwaitingApproval { pending, .. } if path.is_empty() => {
                for p in pending {
                    out.extend(self.tool_call(&p.call_id, &p.tool, &p.input, path));
                }
            }
            RunEvent::StatePatch { patch, .. } if path.is_empty() => {
                // A patch that sets the whole state (the state a run starts with) is a snapshot.
                match e.event.whole_state() {
                    Some(state) => out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": state})),
                    None => out.push(json!({"type": "STATE_DELTA", "delta": patch})),
                }
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
                out.push(json!({"type": "CUSTOM", "name": "agentry.hook_decision", "value": {
                    "hook": hook, "event": event, "decision": decision, "toolCallId": call_id, "tool": tool, "detail": detail,
                    "agentPath": full_path,
                }}));
            }
            RunEvent::RunFinished { .. } | RunEvent::RunFailed { .. } if !path.is_empty() => {
                out.extend(self.close(path));
                if let Some(id) = self.subagents.remove(path) {
                    match &e.event {
                        RunEvent::RunFailed { error, .. } => out.push(json!({"type": "SUBAGENT_ERROR", "subagentRunId": id, "message": error})),
                        _ => out.push(json!({"type": "SUBAGENT_FINISHED", "subagentRunId": id, "outcome": {"type": "success"}})),
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// Closes what is open and ends the AG-UI run as the stored run stands.
    fn finish(&mut self, stored: Option<&agentry::StoredRun>) -> Vec<Value> {
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        let paths: Vec<String> = self.open.keys().cloned().collect();
        let mut out = Vec::new();
        for path in paths {
            out.extend(self.close(&path));
        }
        for (_, id) in self.subagents.drain() {
            out.push(json!({"type": "SUBAGENT_FINISHED", "subagentRunId": id}));
        }
        for name in self.steps.drain(..) {
            out.push(json!({"type": "STEP_FINISHED", "stepName": name}));
        }
        let Some(stored) = stored else {
            out.push(json!({"type": "RUN_ERROR", "message": "the run is not in the store"}));
            return out;
        };
        let s = &stored.snapshot;
        if let Some(error) = &s.error {
            out.push(json!({"type": "RUN_ERROR", "message": error}));
            return out;
        }
        if !s.state.is_null() {
            out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": s.state}));
        }
        let outcome = match &s.stop {
            Some(StopReason::AwaitingApproval { pending }) => {
                json!({"type": "interrupt", "interrupts": pending.iter().map(|p| json!({
                "id": p.call_id, "reason": "tool_approval", "message": p.reason, "toolCallId": p.call_id,
                "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}}, "required": ["approved"]},
            })).collect::<Vec<_>>()})
            }
            Some(StopReason::Cancelled) => json!({"type": "cancelled"}),
            _ => json!({"type": "success"}),
        };
        let mut finished = json!({"type": "RUN_FINISHED", "threadId": self.thread, "runId": self.run, "outcome": outcome});
        if let Some(output) = s.output.as_ref().filter(|o| !o.is_null()) {
            finished["result"] = output.clone();
        }
        out.push(finished);
        out
    }
}
