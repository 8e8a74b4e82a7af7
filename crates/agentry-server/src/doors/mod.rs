//! The doors other software already speaks: each turns its protocol's request into a run of
//! the runtime (so every hook runs the same whichever door a request came in by) and the run's
//! events into its protocol's stream.

pub(crate) mod a2a;
pub(crate) mod ag_ui;
pub(crate) mod ai_sdk;
mod media;

pub(crate) use media::with_media;
pub(crate) mod openai;

use crate::agents::{Go, ServedAgent};
use crate::error::ApiError;
use crate::hub::{HubEvent, RunHub};
use crate::state::AppState;
use agentry::{RunEvent, RunOptions, StoredRun};
use futures::Stream;
use std::sync::Arc;

/// A run a door started: its id and its live events.
pub(crate) struct Started {
    pub(crate) run_id: String,
    pub(crate) hub: Arc<RunHub>,
}

/// Starts a run of `agent` on `input` in `session` (a new one when `None`).
pub(crate) async fn start(
    state: &AppState,
    agent: &Arc<dyn ServedAgent>,
    input: impl Into<agentry::Content>,
    session: Option<String>,
    options: RunOptions,
) -> Result<Started, ApiError> {
    let run_id = uuid::Uuid::new_v4().to_string();
    let session = session.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let options = options.run_id(run_id.clone()).session(session);
    let hub = state
        .launch(
            agent,
            &run_id,
            Go::Start {
                input: input.into(),
                options: Box::new(options),
            },
            0,
        )
        .await?;
    Ok(Started { run_id, hub })
}

/// The events of a drive as they come, until it ends (or the server shuts down).
pub(crate) fn live(
    state: &AppState,
    hub: Arc<RunHub>,
) -> impl Stream<Item = Arc<HubEvent>> + use<> {
    let shutdown = state.shutdown.clone();
    async_stream::stream! {
        let mut changed = hub.watch();
        let mut at = 0;
        loop {
            let (events, done) = hub.read(at);
            at += events.len();
            for e in events {
                yield e;
            }
            if done {
                break;
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { break },
                () = shutdown.cancelled() => break,
            }
        }
    }
}

/// Waits for a drive to end.
pub(crate) async fn ended(state: &AppState, hub: &RunHub) {
    let mut changed = hub.watch();
    while !hub.is_done() {
        tokio::select! {
            r = changed.changed() => if r.is_err() { break },
            () = state.shutdown.cancelled() => break,
        }
    }
}

/// True for an event of the run itself (not of a sub-agent).
pub(crate) fn own(event: &RunEvent) -> bool {
    !event.is_sub_agent()
}

/// What tells a sub-agent's run apart on a door: its path and run (`team/researcher#<run id>`;
/// calls of one sub-agent at once share a path), or its path alone in a history recorded before
/// events named their run.
pub(crate) fn sub_agent_key(event: &RunEvent) -> std::borrow::Cow<'_, str> {
    match event.sub_agent_run() {
        Some(run) => format!("{}#{run}", event.agent_path()).into(),
        None => event.agent_path().into(),
    }
}

/// How a run ended, as doors report it.
pub(crate) enum Outcome {
    /// It answered.
    Answered(String),
    /// It paused for approval: the text says of what and where to decide.
    Paused(String),
    /// It stopped before an answer (cancelled, a guard, a person).
    Stopped(String),
    /// It failed.
    Failed(String),
}

impl Outcome {
    /// The outcome of the stored run (`None`: the store does not hold it).
    pub(crate) fn of(stored: Option<&StoredRun>) -> Outcome {
        let Some(stored) = stored else {
            return Outcome::Failed("the run is not in the store".into());
        };
        let s = &stored.snapshot;
        if let Some(error) = &s.error {
            return Outcome::Failed(error.clone());
        }
        match &s.stop {
            Some(agentry::StopReason::AwaitingApproval { pending }) => {
                let calls: Vec<String> = pending
                    .iter()
                    .map(|p| format!("`{}` ({})", p.tool, p.call_id))
                    .collect();
                Outcome::Paused(format!(
                    "The run paused: {} wait for a person's approval (POST /v1/runs/{}/approvals).",
                    calls.join(", "),
                    s.run_id
                ))
            }
            Some(agentry::StopReason::FinalAnswer | agentry::StopReason::Recovered { .. }) => {
                let text = match &s.output {
                    Some(serde_json::Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                Outcome::Answered(text)
            }
            Some(stop) => Outcome::Stopped(format!("The run stopped: {stop}.")),
            None => Outcome::Failed("the run ended without an outcome".into()),
        }
    }

    /// The text a client is shown.
    pub(crate) fn text(&self) -> &str {
        match self {
            Outcome::Answered(t)
            | Outcome::Paused(t)
            | Outcome::Stopped(t)
            | Outcome::Failed(t) => t,
        }
    }
}

/// The last text of user content given as a string or as typed parts (`{"type": "text" |
/// "input_text", "text": ...}`).
pub(crate) fn content_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The input of a run from a conversation a stateless client sends whole: the last user turn,
/// after what came before it as a transcript (the agent's own instructions stay its own).
pub(crate) fn transcript_input(turns: &[(String, String)]) -> String {
    let Some(last_user) = turns.iter().rposition(|(role, _)| role == "user") else {
        return turns.last().map(|(_, t)| t.clone()).unwrap_or_default();
    };
    if turns.len() == 1 {
        return turns[0].1.clone();
    }
    let mut input = String::from("The conversation so far:\n");
    for (role, text) in &turns[..last_user] {
        input.push_str(&format!("{role}: {text}\n"));
    }
    input.push('\n');
    input.push_str(&turns[last_user].1);
    for (role, text) in &turns[last_user + 1..] {
        input.push_str(&format!("\n{role}: {text}"));
    }
    input
}
