//! A stored run run again with today's hooks: its recorded model turns played back and its
//! recorded tool results given back, so a change of hooks can be tried against real history
//! offline (no model called, no tool run, nothing stored); then where the decisions differ.
//!
//! What runs is the agent you pass (its hooks, the runtime's hooks), with a model that plays the
//! recording's turns (text, reasoning, tool calls with their ids and arguments verbatim) and
//! tools that give back the recorded results. A call a hook now blocks, mocks or rewrites shows
//! as a difference; a call that did not run in the recording (a hook blocked it, a person
//! rejected it) and that the replay lets through gets an error result saying so. Approvals are
//! decided as the recording went: a call that ran was approved.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentry::prelude::*;
//! use agentry::{MemoryStore, RunStore, ScriptedTurn, replay};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Path { path: String }
//!
//! let store = MemoryStore::new();
//! let delete = || tool("delete", "Deletes a path.", |_: Path, _c: ToolCtx| async move { Ok("deleted") });
//! let model = ScriptedModel::new()
//!     .turn(ScriptedTurn::new().with_tool_call("delete", serde_json::json!({"path": "/tmp/x"})))
//!     .text("Done.");
//! let agent = Agent::builder("cleaner").model(model).tool(delete()).build()?;
//! let run = Runtime::new().store(store.clone()).run(&agent, "clean up").await?;
//!
//! // Today a guard blocks deletes: the replay shows the call's outcome changed.
//! let guarded = Agent::builder("cleaner")
//!     .model(ScriptedModel::new())
//!     .tool(delete())
//!     .with(on::before_tool(|mut ev, _| async move { ev.block("no deletes"); Ok(ev) }))
//!     .build()?;
//! let events = store.events(&run.run_id).await?;
//! let report = replay::replay(&Runtime::new(), &guarded, &events).await?;
//! assert_eq!(report.differences, 1);
//! assert!(report.calls[0].replay.decisions[0].starts_with("blocked"));
//! # Ok(()) }
//! ```

use crate::hooks::{HookExt, on_sync};
use crate::{
    Agent, AgentState, AgentTool, Decision, Message, ModelErrorKind, RunEvent, RunOptions, Runtime,
    ScriptedModel, ScriptedTurn, StoredEvent, Tool, ToolCall, ToolCtx, ToolFailure, ToolOutput,
    ToolSpec,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Why a run could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The recording has no input message.
    #[error("the run recorded no input message: there is nothing to replay")]
    NoInput,
    /// The agent could not take the recorded tools.
    #[error("the agent could not be set up for the replay: {0}")]
    Agent(String),
}

/// What a stored run recorded: its input, model turns, tool calls and their outcomes, and how it
/// ended.
#[derive(Debug)]
pub struct Recording {
    input: agentry_core::Content,
    turns: Vec<ScriptedTurn>,
    calls: Vec<ToolCall>,
    outcomes: Outcomes,
}

/// What happened to each tool call, and how the run ended.
#[derive(Debug, Default)]
struct Outcomes {
    /// The decisions hooks took about each call (blocked, mocked, rewrote, asked), by call id.
    decisions: HashMap<String, Vec<String>>,
    /// The result the model saw, by call id.
    results: HashMap<String, (String, bool)>,
    /// Calls a person (or a hook) rejected.
    rejected: HashMap<String, String>,
    /// How the run ended.
    end: Option<String>,
}

/// One call's outcome: the decisions taken on it, then the result the model saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallOutcome {
    /// Each decision, as `DECISION by HOOK: DETAIL` (`blocked by no-deletes: ...`), then a
    /// person's rejection.
    pub decisions: Vec<String>,
    /// The result's content, when the call had one.
    pub content: Option<String>,
    /// Whether that result was an error.
    pub is_error: Option<bool>,
}

impl CallOutcome {
    /// True when a hook kept the call from running (blocked or answered it).
    pub fn kept_from_running(&self) -> bool {
        self.decisions
            .iter()
            .any(|d| d.starts_with("blocked") || d.starts_with("mocked"))
    }
}

/// One recorded call, as it went then and as it goes now.
#[derive(Clone, Debug, Serialize)]
pub struct CallComparison {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments as the model sent them.
    pub arguments: String,
    /// Its outcome in the recording.
    pub recorded: CallOutcome,
    /// Its outcome in the replay.
    pub replay: CallOutcome,
    /// True when both are the same.
    pub same: bool,
}

/// The replay against the recording.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// The model turns played back.
    pub model_turns: usize,
    /// Every recorded call, in the order the model asked for them.
    pub calls: Vec<CallComparison>,
    /// How the recorded run ended.
    pub recorded_end: Option<String>,
    /// How the replay ended.
    pub replay_end: Option<String>,
    /// Calls whose outcome differs, and 1 more when the ends differ.
    pub differences: usize,
}

impl Outcomes {
    /// Notes a streamed event of the replay (only the replayed agent's own).
    fn note(&mut self, event: &RunEvent, agent: &str) {
        if event.agent_path() != agent {
            return;
        }
        self.note_any(event);
    }

    fn note_any(&mut self, event: &RunEvent) {
        match event {
            RunEvent::HookDecision {
                hook,
                decision,
                call_id,
                detail,
                ..
            } => self.decided(call_id, hook, decision, detail),
            RunEvent::Message { message, .. } => {
                if let Message::Tool(result) = &**message {
                    self.results.insert(
                        result.call_id.clone(),
                        (result.content.describe().into_owned(), result.is_error),
                    );
                }
            }
            RunEvent::ApprovalResolved { decision, by, .. } => self.resolved(decision, by),
            RunEvent::RunFinished { stop, .. } => self.end = Some(stop.to_string()),
            RunEvent::RunFailed { error, .. } => self.end = Some(format!("failed: {error}")),
            _ => {}
        }
    }

    fn decided(&mut self, call_id: &str, hook: &str, decision: &str, detail: &str) {
        let by = if hook.is_empty() {
            String::new()
        } else {
            format!(" by {hook}")
        };
        self.decisions
            .entry(call_id.to_owned())
            .or_default()
            .push(format!("{decision}{by}: {}", one_line(detail)));
    }

    fn resolved(&mut self, decision: &Decision, by: &str) {
        let (what, reason) = match decision {
            Decision::Reject { reason, .. } => ("reject", reason),
            Decision::RejectAndStop { reason, .. } => ("reject_and_stop", reason),
            _ => return,
        };
        self.rejected.insert(
            decision.call_id().to_owned(),
            format!("{what} by {by}: {reason}"),
        );
    }

    fn of(&self, call_id: &str) -> CallOutcome {
        let mut decisions = self.decisions.get(call_id).cloned().unwrap_or_default();
        if let Some(rejected) = self.rejected.get(call_id) {
            decisions.push(rejected.clone());
        }
        let result = self.results.get(call_id);
        CallOutcome {
            decisions,
            content: result.map(|r| r.0.clone()),
            is_error: result.map(|r| r.1),
        }
    }

    /// Why the call did not run, when a hook or a person kept it from running.
    fn kept_from_running(&self, call_id: &str) -> Option<String> {
        if let Some(r) = self.rejected.get(call_id) {
            return Some(r.clone());
        }
        self.decisions
            .get(call_id)?
            .iter()
            .find(|d| d.starts_with("blocked") || d.starts_with("mocked"))
            .cloned()
    }
}

/// A decision's detail on one line, at most 100 characters.
fn one_line(text: &str) -> String {
    const WIDTH: usize = 100;
    let line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if line.chars().count() <= WIDTH {
        return line;
    }
    let mut cut: String = line.chars().take(WIDTH - 1).collect();
    cut.push('…');
    cut
}

impl Recording {
    /// The recording of a stored run, from its events (`RunStore::events`). Events of kinds
    /// this version does not know play no part, nor do its sub-agents' (a sub-agent's call
    /// gives back its recorded result, as any tool's).
    ///
    /// # Errors
    /// [`ReplayError::NoInput`] when the events hold no input message.
    pub fn of(events: &[StoredEvent]) -> Result<Recording, ReplayError> {
        let mut input = None;
        let mut turns = Vec::new();
        let mut calls = Vec::new();
        let mut outcomes = Outcomes::default();
        // The run's own events: its sub-agents' (recorded beside them) were its tools' work.
        let mut own: Option<String> = None;
        for stored in events {
            let Ok(event) = RunEvent::from_recorded(&stored.event) else {
                continue;
            };
            if event.agent_path() != own.get_or_insert_with(|| event.agent_path().to_owned()) {
                continue;
            }
            if let RunEvent::Message { message, .. } = &event {
                match &**message {
                    Message::User { content } if input.is_none() => input = Some(content.clone()),
                    Message::Assistant {
                        content,
                        thinking,
                        tool_calls,
                    } => {
                        let mut turn = ScriptedTurn::new();
                        if let Some(thinking) = thinking {
                            turn = turn.with_thinking(thinking.text.clone());
                        }
                        if !content.is_empty() {
                            turn = turn.with_text(content.text().into_owned());
                        }
                        for call in tool_calls {
                            calls.push(call.clone());
                            turn = turn.with_call(call.clone());
                        }
                        turns.push(turn);
                        continue;
                    }
                    _ => {}
                }
            }
            outcomes.note_any(&event);
        }
        Ok(Recording {
            input: input.ok_or(ReplayError::NoInput)?,
            turns,
            calls,
            outcomes,
        })
    }

    /// The run's input (text, or parts).
    pub fn input(&self) -> &agentry_core::Content {
        &self.input
    }

    /// The model turns it recorded.
    pub fn model_turns(&self) -> usize {
        self.turns.len()
    }

    /// The model that plays the recorded turns back: the turn is chosen by how many model turns
    /// the replay has had.
    fn model(self: &Arc<Self>) -> ScriptedModel {
        let recording = self.clone();
        ScriptedModel::from_fn(move |_, req| {
            let played = req
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Assistant { .. }))
                .count();
            recording.turns.get(played).cloned().unwrap_or_else(|| {
                ScriptedTurn::error(
                    ModelErrorKind::Other,
                    format!(
                        "the replay asked for model turn {} and the recording has {}: the hooks \
                         took the run somewhere the recording never went",
                        played + 1,
                        recording.turns.len()
                    ),
                )
            })
        })
        .named("replay")
    }

    /// `agent` with the recorded model and tools that give back recorded results. Tools the
    /// recording called that the agent does not have (an MCP server's) are added, taking any
    /// input.
    ///
    /// # Errors
    /// [`ReplayError::Agent`] when the added tools clash with the agent's.
    pub fn agent<S, O>(self: &Arc<Self>, agent: &Agent<S, O>) -> Result<Agent<S, O>, ReplayError> {
        let replay_tool = |spec: ToolSpec, needs_approval: bool| -> Arc<dyn Tool> {
            Arc::new(ReplayTool {
                spec,
                needs_approval,
                recording: self.clone(),
            })
        };
        let def = agent.def();
        let mut extra: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        for call in &self.calls {
            if def.find_tool(&call.name).is_none() {
                let spec = ToolSpec {
                    name: call.name.clone(),
                    description: "a tool of the recorded run, replayed".into(),
                    parameters: json!({"type": "object"}),
                };
                extra.insert(call.name.clone(), replay_tool(spec, false));
            }
        }
        let tools: Vec<AgentTool> = def
            .tools
            .iter()
            .map(|t| {
                let needs_approval =
                    matches!(t, AgentTool::Tool { tool, .. } if tool.needs_approval());
                AgentTool::Tool {
                    tool: replay_tool(t.spec().clone(), needs_approval),
                    validator: Arc::new(t.validator().clone()),
                }
            })
            .collect();
        let mut with_tools = agent.modified(|d| {
            d.model = Some(Arc::new(self.model()));
            d.tools = tools;
            d.specs = d.tools.iter().map(|t| t.spec().clone()).collect();
        });
        if !extra.is_empty() {
            let def = with_tools
                .def()
                .with_source_tools(extra.values())
                .map_err(|e| ReplayError::Agent(e.to_string()))?;
            with_tools = with_tools.modified(|d| *d = def);
        }
        Ok(with_tools)
    }

    /// The replay `now` noted, against this recording.
    fn compare(&self, now: &Outcomes) -> ReplayReport {
        let calls: Vec<CallComparison> = self
            .calls
            .iter()
            .map(|c| {
                let (recorded, replay) = (self.outcomes.of(&c.id), now.of(&c.id));
                CallComparison {
                    call_id: c.id.clone(),
                    tool: c.name.clone(),
                    arguments: c.arguments.clone(),
                    same: recorded == replay,
                    recorded,
                    replay,
                }
            })
            .collect();
        let mut differences = calls.iter().filter(|c| !c.same).count();
        if self.outcomes.end != now.end {
            differences += 1;
        }
        ReplayReport {
            model_turns: self.turns.len(),
            calls,
            recorded_end: self.outcomes.end.clone(),
            replay_end: now.end.clone(),
            differences,
        }
    }
}

/// Replays the run `events` recorded with `agent` as it is now, on `runtime` without its store
/// (nothing is stored), and compares.
///
/// # Errors
/// The recording has no input, or the agent could not take its tools.
pub async fn replay<S, O>(
    runtime: &Runtime,
    agent: &Agent<S, O>,
    events: &[StoredEvent],
) -> Result<ReplayReport, ReplayError>
where
    S: AgentState,
    O: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    let recording = Arc::new(Recording::of(events)?);
    let replayed = recording.agent(agent)?;
    let runtime = runtime.without_store();
    // Approvals are decided as the recording went: a call that ran was approved.
    let approve = on_sync::approval_requested(|ev, _| {
        ev.approve();
        Ok(())
    })
    .named("replay")
    .priority(i32::MIN);
    let mut handle = runtime
        .run(&replayed, recording.input.clone())
        .with(RunOptions::new().with(approve))
        .start();
    let mut now = Outcomes::default();
    while let Some(event) = handle.events().next().await {
        now.note(&event, replayed.name());
    }
    if let Err(e) = handle.result().await
        && now.end.is_none()
    {
        now.end = Some(format!("failed: {e}"));
    }
    Ok(recording.compare(&now))
}

/// A tool that gives back the recorded result of each call.
struct ReplayTool {
    spec: ToolSpec,
    needs_approval: bool,
    recording: Arc<Recording>,
}

impl Tool for ReplayTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn needs_approval(&self) -> bool {
        self.needs_approval
    }

    fn call<'a>(
        &'a self,
        _input: Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        let outcomes = &self.recording.outcomes;
        let id = ctx.call_id();
        let out = match (outcomes.kept_from_running(id), outcomes.results.get(id)) {
            (Some(why), _) => Err(ToolFailure::new(format!(
                "(replay) in the recorded run this call did not run ({why}); there is no result \
                 to play back"
            ))),
            (None, Some((content, false))) => Ok(ToolOutput::text(content.clone())),
            (None, Some((content, true))) => Err(ToolFailure::new(content.clone())),
            (None, None) => Err(ToolFailure::new(
                "(replay) the recorded run has no result for this call",
            )),
        };
        Box::pin(std::future::ready(out))
    }
}
