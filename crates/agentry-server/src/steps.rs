//! A run's steps at a glance: where each step's events stand in the run's history and what the
//! step used, read from the store a page at a time, so a page can list a run of thousands of
//! steps and fetch one step's events (`/events?after=..&until=..`) when a person opens it.

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use agentry::{RunEvent, StoredEvent};
use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One step of a run, as its recorded events tell it.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct StepSummary {
    /// The step's number (from 1).
    pub step: u32,
    /// The number of its first recorded event (its `step_started`): its events are those of
    /// `GET /v1/runs/{id}/events?after={first - 1}&until={last}`.
    pub first: u64,
    /// The number of its last recorded event (the last before the next step's start).
    pub last: u64,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// When it finished, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<i64>,
    /// Tokens it used, once it finished (the `step_finished` event's `usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub usage: Option<Value>,
    /// What the tokens cost, in US dollars, when the server knows its agent's price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// How many messages its model call was sent, when it called the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages_sent: Option<u64>,
    /// How many tool calls it made.
    pub tool_calls: u32,
    /// How many runs of sub-agents it started.
    pub sub_agent_runs: u32,
    /// Whether the run failed in it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// A run's steps.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunSteps {
    /// The run.
    pub run_id: String,
    /// The number of the last recorded event: those before the first step's start are the
    /// run's opening (its input, its start state).
    pub last_event: u64,
    /// Its steps, in order.
    pub steps: Vec<StepSummary>,
}

/// A run's steps: where each one's events are and what it used (tokens, cost, tool calls,
/// sub-agents' runs, duration), read from the store, so a long run is listed without reading
/// every event into the page.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/steps", tag = "runs",
    params(("run_id" = String, Path, description = "The run")),
    responses((status = 200, body = RunSteps), (status = 404, body = ErrorBody)),
)]
pub(crate) async fn run_steps(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<RunSteps>, ApiError> {
    state.load(&run_id).await?;
    let mut tally = Tally::default();
    let mut after = 0;
    loop {
        let page = state
            .store
            .events_page(&run_id, after, state.events_page)
            .await?;
        let last_page = page.len() < state.events_page;
        for e in &page {
            after = e.seq;
            tally.add(&state, e);
        }
        if last_page {
            break;
        }
    }
    Ok(Json(RunSteps {
        run_id,
        last_event: after,
        steps: tally.steps,
    }))
}

/// The steps read so far.
#[derive(Default)]
struct Tally {
    /// The run's own agent path (its first event's).
    own: Option<String>,
    steps: Vec<StepSummary>,
    /// The tool calls of the last step (a call that goes on after a pause starts again).
    calls: Vec<String>,
}

impl Tally {
    fn add(&mut self, state: &AppState, e: &StoredEvent) {
        let data = &e.event.data;
        let field = |name: &str| data.get(name).and_then(Value::as_str);
        let path = field("agent_path").unwrap_or_default();
        let own = self.own.get_or_insert_with(|| path.to_owned());
        // A sub-agent's events name their run; the run's own do not.
        let mine = path == own.as_str() && field("run_id").is_none();
        let kind = e.event.kind.as_str();
        if mine && kind == "step_started" {
            self.calls.clear();
            self.steps.push(StepSummary {
                step: data.get("step").and_then(Value::as_u64).unwrap_or_default() as u32,
                first: e.seq,
                last: e.seq,
                started_at_ms: e.event.at_ms,
                ..StepSummary::default()
            });
            return;
        }
        let Some(step) = self.steps.last_mut() else {
            return;
        };
        step.last = e.seq;
        match (kind, mine) {
            ("model_request", true) => {
                step.messages_sent = data.get("messages").and_then(Value::as_u64)
            }
            ("tool_started", true) => {
                let call = field("call_id").unwrap_or_default();
                if !self.calls.iter().any(|c| c == call) {
                    self.calls.push(call.to_owned());
                    step.tool_calls += 1;
                }
            }
            ("run_started", false) => step.sub_agent_runs += 1,
            ("run_failed", true) => step.failed = true,
            ("step_finished", true) => {
                step.finished_at_ms = Some(e.event.at_ms);
                step.usage = data.get("usage").cloned();
                step.cost_usd = RunEvent::from_recorded(&e.event)
                    .ok()
                    .and_then(|ev| crate::pricing::step_cost(&state.prices, &ev));
            }
            _ => {}
        }
    }
}
