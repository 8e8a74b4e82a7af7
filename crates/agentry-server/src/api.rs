//! The request and response bodies of the run API, as the OpenAPI document describes them.

use agentry::content::Part;
use agentry::{
    Content, Decision, Message, PendingApproval, Role, RunStatus, RunSummary, StoredRun,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

/// A run to start.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    /// The agent (the server's default agent when left out).
    #[serde(default)]
    pub agent: Option<String>,
    /// What the user asks (may be empty when `parts` say it).
    #[serde(default)]
    pub input: String,
    /// Images, documents and audio the input carries, before its text: each
    /// `{"type": "image" | "file" | "audio" | "text", "media_type", "name"?}` with the bytes
    /// as base64 `data` or a `url` (`{"type": "text", "text"}` for text).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub parts: Vec<Part>,
    /// The session (conversation) the run belongs to: it goes on from the session's last run.
    /// A new session when left out.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The user the run is for (hooks and traces see it).
    #[serde(default)]
    pub user_id: Option<String>,
    /// Tags (hooks and traces see them).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Metadata (hooks and traces see it).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Answer once the run ended or paused, with its final view, instead of at once.
    #[serde(default)]
    pub wait: bool,
}

/// A fork of a stored run: a new run from the end of one of its steps.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRun {
    /// The step whose end the fork starts from; 0 is the run's start (its input, before its
    /// first step).
    pub step: u32,
    /// A message to go on with: at step 0 it replaces the run's input; after a step it is
    /// added as the user's next message. Required when the step ended with the model's answer.
    #[serde(default)]
    pub input: Option<String>,
    /// The state to go on with, instead of the state as it was at that step.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub state: Option<Value>,
    /// Answer once the fork ended or paused, with its final view, instead of at once.
    #[serde(default)]
    pub wait: bool,
}

/// The input of a run to start: its parts, then its text; an error that says what is wrong
/// when it is empty or holds a part the server cannot take.
pub(crate) fn run_input(parts: Vec<Part>, input: String) -> Result<Content, String> {
    if let Some((i, part)) = parts.iter().enumerate().find(|(_, p)| {
        p.media()
            .and_then(|m| m.blob())
            .is_some_and(|b| !b.is_loaded())
    }) {
        return Err(format!(
            "part {i} ({}) is given by `sha256`: give its bytes as base64 `data`, or a `url`",
            part.kind()
        ));
    }
    let content = crate::doors::with_media(parts, input);
    if content.is_empty() {
        return Err("`input` is empty: say what the agent should do".into());
    }
    Ok(content)
}

/// How a session ends (`POST /v1/sessions/{id}/end`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSession {
    /// Why, as SessionEnd hooks see it (Claude Code's reasons: `clear`, `logout`,
    /// `prompt_input_exit`, `other`); `other` when left out.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A run's input in a session.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInput {
    /// The agent (the session's agent, else the server's default, when left out).
    #[serde(default)]
    pub agent: Option<String>,
    /// What the user says (may be empty when `parts` say it).
    #[serde(default)]
    pub input: String,
    /// Images, documents and audio before the text, as in a run's start.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub parts: Vec<Part>,
    /// The user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Answer once the run ended or paused, with its final view.
    #[serde(default)]
    pub wait: bool,
}

/// A run as it stands in the store.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    /// The run id.
    pub run_id: String,
    /// Its agent.
    pub agent: String,
    /// Its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Its parent run, for a sub-agent's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Its user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// `running`, `awaiting_approval`, `cancelled`, `failed` or `finished`.
    pub status: String,
    /// Steps completed.
    pub step: u32,
    /// Why it stopped, once it did (the JSON form of a stop reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    /// Its output, once it ended with one (a text answer is a JSON string).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    /// The text of its last answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tool calls waiting for a decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingView>,
    /// Tokens used.
    #[schema(value_type = Object)]
    pub usage: Value,
    /// What the tokens cost, in US dollars, when the server knows its agent's price
    /// ([`ServerBuilder::price`](crate::ServerBuilder::price); 0 for a model that runs here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Its metadata (what it was started with; a fork's names the run and step it came from:
    /// `forked_from`, `forked_at_step`).
    #[serde(skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Where its events stream (Server-Sent Events).
    pub events_url: String,
}

impl RunView {
    /// The view of a run just started at step `step` (nothing used yet; its cost 0 when its
    /// price is known).
    pub(crate) fn started(
        run_id: &str,
        agent: &str,
        session_id: Option<String>,
        step: u32,
        metadata: Map<String, Value>,
        priced: bool,
    ) -> Self {
        RunView {
            run_id: run_id.to_owned(),
            agent: agent.to_owned(),
            session_id,
            parent_run_id: None,
            user_id: None,
            status: agentry::RunStatus::Running.as_str().to_owned(),
            step,
            stop: None,
            output: None,
            text: None,
            error: None,
            pending: Vec::new(),
            usage: serde_json::json!({}),
            cost_usd: priced.then_some(0.0),
            metadata,
            events_url: format!("/v1/runs/{run_id}/events"),
        }
    }

    /// The view of a stored run, its cost at `price`.
    pub(crate) fn of(stored: &StoredRun, price: Option<agentry::Price>) -> Self {
        let s = &stored.snapshot;
        let pending = match &s.stop {
            Some(agentry::StopReason::AwaitingApproval { pending }) => {
                pending.iter().map(PendingView::of).collect()
            }
            _ => Vec::new(),
        };
        let text = s
            .messages
            .iter()
            .rev()
            .find(|m| m.role() == Role::Assistant && !m.text().is_empty())
            .map(|m| m.text().into_owned());
        RunView {
            run_id: s.run_id.clone(),
            agent: s.agent.clone(),
            session_id: s.session_id.clone(),
            parent_run_id: s.parent_run_id.clone(),
            user_id: s.user_id.clone(),
            status: s.status().as_str().to_owned(),
            step: s.step,
            stop: s.stop.as_ref().and_then(|r| serde_json::to_value(r).ok()),
            output: s.output.clone(),
            text,
            error: s.error.clone(),
            pending,
            usage: serde_json::to_value(s.usage).unwrap_or_default(),
            cost_usd: price.map(|p| p.cost(&s.usage)),
            metadata: s.metadata.clone(),
            events_url: format!("/v1/runs/{}/events", s.run_id),
        }
    }
}

/// A tool call waiting for a person's decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingView {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The input the tool would receive.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Why approval is needed.
    pub reason: String,
}

impl PendingView {
    fn of(p: &PendingApproval) -> Self {
        PendingView {
            call_id: p.call_id.clone(),
            tool: p.tool.clone(),
            input: p.input.clone(),
            reason: p.reason.clone(),
        }
    }
}

/// One run of a listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunItem {
    /// The run id.
    pub run_id: String,
    /// Its agent.
    pub agent: String,
    /// Its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Its parent run, for a sub-agent's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Where it stands.
    pub status: String,
    /// Steps completed.
    pub step: u32,
    /// First saved, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last saved, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// Tokens used so far: `input_tokens`, `output_tokens`.
    #[schema(value_type = Object)]
    pub usage: serde_json::Value,
    /// What they cost, in US dollars, when the server knows its agent's price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl RunItem {
    /// The item of a listed run, its cost at `price`.
    pub(crate) fn of(s: RunSummary, price: Option<agentry::Price>) -> Self {
        RunItem {
            cost_usd: price.map(|p| p.cost(&s.usage)),
            run_id: s.run_id,
            agent: s.agent,
            session_id: s.session_id,
            parent_run_id: s.parent_run_id,
            status: s.status.as_str().to_owned(),
            step: s.step,
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
            usage: serde_json::json!({
                "input_tokens": s.usage.input_tokens,
                "output_tokens": s.usage.output_tokens,
            }),
        }
    }
}

/// A page of runs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunPage {
    /// The runs.
    pub runs: Vec<RunItem>,
    /// Pass as `before` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before: Option<String>,
}

/// Which runs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListRuns {
    /// Only runs in this status (`running`, `awaiting_approval`, `cancelled`, `failed`,
    /// `finished`).
    pub status: Option<String>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// At most this many (50 by default, 500 at most).
    pub limit: Option<u32>,
    /// Only runs older than this one: the `next_before` of the previous page.
    pub before: Option<String>,
    /// Only runs of their own, no sub-agent's run (`true`); by default every run is listed.
    #[serde(default)]
    pub top_level: bool,
}

impl ListRuns {
    /// The status filter, checked.
    pub(crate) fn status(&self) -> Result<Option<RunStatus>, String> {
        self.status
            .as_deref()
            .map(|s| {
                RunStatus::parse(s).ok_or_else(|| {
                    format!(
                        "unknown status `{s}`: use running, awaiting_approval, cancelled, failed \
                         or finished"
                    )
                })
            })
            .transpose()
    }
}

/// What a decision does to a pending call.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call.
    Approve,
    /// Do not run it; the model sees the reason as its result and goes on.
    Reject,
    /// Do not run it, and stop the run.
    RejectAndStop,
}

/// A person's decision on a pending call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// The call; left out, the decision applies to every pending call no other decision names.
    #[serde(default)]
    pub call_id: Option<String>,
    /// What to do.
    pub decision: DecisionKind,
    /// What the model (reject) or the record (reject_and_stop) is told.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Decisions on a paused run's pending calls: every pending call decided once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    /// The decisions.
    pub decisions: Vec<DecisionBody>,
    /// Answer once the run ended or paused again, with its final view.
    #[serde(default)]
    pub wait: bool,
}

impl Decide {
    /// The decisions for `pending`, each call once: named ones first, then the one without a
    /// call id for every other call.
    pub(crate) fn resolve(&self, pending: &[PendingApproval]) -> Result<Vec<Decision>, String> {
        let make = |d: &DecisionBody, call_id: &str| {
            let reason = d
                .reason
                .clone()
                .unwrap_or_else(|| "rejected by a person".to_owned());
            match d.decision {
                DecisionKind::Approve => Decision::approve(call_id),
                DecisionKind::Reject => Decision::reject(call_id, reason),
                DecisionKind::RejectAndStop => Decision::reject_and_stop(call_id, reason),
            }
        };
        let mut decisions: Vec<Decision> = self
            .decisions
            .iter()
            .filter_map(|d| d.call_id.as_deref().map(|id| make(d, id)))
            .collect();
        let rest: Vec<&DecisionBody> = self
            .decisions
            .iter()
            .filter(|d| d.call_id.is_none())
            .collect();
        match rest.as_slice() {
            [] => {}
            [all] => {
                for p in pending {
                    if !decisions.iter().any(|d| d.call_id() == p.call_id) {
                        decisions.push(make(all, &p.call_id));
                    }
                }
            }
            _ => return Err("give at most one decision without a call_id".to_owned()),
        }
        Ok(decisions)
    }
}

/// An agent the server serves.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    /// Its name (what `agent` in a request names).
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// True for the agent a request that names none runs.
    pub default: bool,
}

/// A session: a conversation across runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionItem {
    /// The session id.
    pub session_id: String,
    /// The agent of its latest run.
    pub agent: String,
    /// Its latest run.
    pub latest_run_id: String,
    /// Where its latest run stands.
    pub status: String,
    /// When its latest run was last saved, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

/// A page of sessions, the most recently active first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPage {
    /// The sessions.
    pub sessions: Vec<SessionItem>,
}

/// Which sessions to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSessions {
    /// Only sessions of this agent.
    pub agent: Option<String>,
    /// At most this many (50 by default, 500 at most).
    pub limit: Option<u32>,
}

/// A session's runs and its conversation so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The session id.
    pub session_id: String,
    /// Its top-level runs, newest first.
    pub runs: Vec<RunItem>,
    /// The conversation as its latest run holds it (JSON messages).
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
}

/// A run's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessagesView {
    /// The run.
    pub run_id: String,
    /// Its messages, oldest first (JSON messages).
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
}

/// The JSON form of messages.
pub(crate) fn messages_json<'a>(messages: impl Iterator<Item = &'a Message>) -> Vec<Value> {
    messages
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        .collect()
}

/// Which events of a run to stream.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamEvents {
    /// Only events after this id (as the `Last-Event-ID` header gives it; the header wins).
    pub after: Option<String>,
    /// Only events up to the recorded event of this number: the stream ends once it was sent
    /// (one step's events, as `GET /v1/runs/{id}/steps` places them).
    pub until: Option<u64>,
}

/// The server's health.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: &'static str,
}
