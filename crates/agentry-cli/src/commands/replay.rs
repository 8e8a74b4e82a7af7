//! `agentry replay RUN`: a stored run run again with today's hooks, its recorded model turns
//! played back and its recorded tool results given back, so hook changes can be tried against
//! real history offline; then where the decisions differ.
//!
//! What runs: the agent of the config (its hooks, the runtime's hooks), in memory (nothing is
//! stored). What is played back: every model turn (text, reasoning, tool calls with their ids and
//! arguments verbatim) and every tool result. A call a hook now blocks, mocks or rewrites shows
//! as a difference; a call that did not run in the recording (a hook blocked it, a person
//! rejected it) and that the replay lets through gets an error result saying so.

use super::{Failure, failed, open};
use crate::cli::Cli;
use crate::exit::Exit;
use crate::project::CliAgent;
use crate::render::{cut_line, short_content, short_input};
use agentry::hooks::{HookExt, on_sync};
use agentry::{
    AgentTool, Decision, Message, ModelErrorKind, RunEvent, RunOptions, ScriptedModel,
    ScriptedTurn, StoredEvent, Tool, ToolCall, ToolCtx, ToolFailure, ToolOutput, ToolSpec,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// `agentry replay RUN`.
pub(super) async fn replay(cli: &Cli, run: &str, agent: Option<&str>) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    let stored = super::manage::load(&project, run).await?;
    let events = project
        .store
        .events(run)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let recording = Arc::new(Recording::of(&events)?);
    let agent = project
        .agent(Some(agent.unwrap_or(&stored.snapshot.agent)))
        .map_err(|e| (Exit::Usage, e))?;
    let replayed = replay_agent(agent, &recording)?;
    let runtime = project.runtime.without_store();
    // Approvals are decided as the recording went: a call that ran was approved.
    let approve = on_sync::approval_requested(|ev, _| {
        ev.approve();
        Ok(())
    })
    .named("replay")
    .priority(i32::MIN);
    let options = RunOptions::new().with(approve);
    let mut handle = runtime
        .run(&replayed, recording.input.clone())
        .with(options)
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
    let report = compare(&recording, &now);
    report.print(cli.json, run, &recording);
    Ok(if report.differences == 0 {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// What a stored run recorded: its input, model turns, tool calls and their outcomes, and how it
/// ended.
struct Recording {
    input: String,
    turns: Vec<ScriptedTurn>,
    /// Every tool call, in the order the model asked for them.
    calls: Vec<ToolCall>,
    outcomes: Outcomes,
}

/// What happened to each tool call, and how the run ended.
#[derive(Default)]
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

impl Outcomes {
    /// Notes a streamed event of the replay (only the replayed agent's own).
    fn note(&mut self, event: &RunEvent, agent: &str) {
        if event.agent_path() != agent {
            return;
        }
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
                        (result.content.clone(), result.is_error),
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
            .push(format!("{decision}{by}: {}", cut_line(detail)));
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

    /// The outcome of one call, in a line: the decisions, then the result.
    fn of(&self, call_id: &str) -> Outcome {
        let mut decisions = self.decisions.get(call_id).cloned().unwrap_or_default();
        if let Some(rejected) = self.rejected.get(call_id) {
            decisions.push(rejected.clone());
        }
        Outcome {
            decisions,
            result: self.results.get(call_id).cloned(),
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

/// One call's outcome.
#[derive(PartialEq)]
struct Outcome {
    decisions: Vec<String>,
    result: Option<(String, bool)>,
}

impl Outcome {
    fn json(&self) -> Value {
        json!({
            "decisions": self.decisions,
            "content": self.result.as_ref().map(|r| &r.0),
            "is_error": self.result.as_ref().map(|r| r.1),
        })
    }

    fn line(&self) -> String {
        let result = match &self.result {
            None => "no result".to_owned(),
            Some((content, true)) => format!("error: {}", short_content(content)),
            Some((content, false)) => short_content(content),
        };
        let kept = self
            .decisions
            .iter()
            .any(|d| d.starts_with("blocked") || d.starts_with("mocked"));
        match (self.decisions.is_empty(), kept) {
            (true, _) => format!("ran → {result}"),
            // The result is the block's reason or the mock: the decision says it.
            (false, true) => self.decisions.join("; "),
            (false, false) => format!("{} → {result}", self.decisions.join("; ")),
        }
    }
}

impl Recording {
    fn of(events: &[StoredEvent]) -> Result<Recording, Failure> {
        let mut input = None;
        let mut turns = Vec::new();
        let mut calls = Vec::new();
        let mut outcomes = Outcomes::default();
        for stored in events {
            // Events of kinds this version does not know (or cannot read) play no part.
            let Ok(event) = RunEvent::from_recorded(&stored.event) else {
                continue;
            };
            match event {
                RunEvent::Message { message, .. } => match Arc::unwrap_or_clone(message) {
                    Message::User { content } if input.is_none() => input = Some(content),
                    Message::Assistant {
                        content,
                        thinking,
                        tool_calls,
                    } => {
                        let mut turn = ScriptedTurn::new();
                        if let Some(thinking) = thinking {
                            turn = turn.with_thinking(thinking.text);
                        }
                        if !content.is_empty() {
                            turn = turn.with_text(content);
                        }
                        for call in tool_calls {
                            calls.push(call.clone());
                            turn = turn.with_call(call);
                        }
                        turns.push(turn);
                    }
                    Message::Tool(result) => {
                        outcomes
                            .results
                            .insert(result.call_id, (result.content, result.is_error));
                    }
                    _ => {}
                },
                RunEvent::HookDecision {
                    call_id,
                    hook,
                    decision,
                    detail,
                    ..
                } => outcomes.decided(&call_id, &hook, &decision, &detail),
                RunEvent::ApprovalResolved { decision, by, .. } => {
                    outcomes.resolved(&decision, &by)
                }
                RunEvent::RunFinished { stop, .. } => outcomes.end = Some(stop.to_string()),
                RunEvent::RunFailed { error, .. } => {
                    outcomes.end = Some(format!("failed: {error}"))
                }
                _ => {}
            }
        }
        let input = input.ok_or_else(|| {
            failed("the run recorded no input message: there is nothing to replay")
        })?;
        Ok(Recording {
            input,
            turns,
            calls,
            outcomes,
        })
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

/// The agent with the recorded model and tools that give back recorded results. Tools the
/// recording called that the agent does not have (an MCP server's) are added, taking any input.
fn replay_agent(agent: &CliAgent, recording: &Arc<Recording>) -> Result<CliAgent, Failure> {
    let replay_tool = |spec: ToolSpec, needs_approval: bool| -> Arc<dyn Tool> {
        Arc::new(ReplayTool {
            spec,
            needs_approval,
            recording: recording.clone(),
        })
    };
    let def = agent.def();
    let mut extra: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
    for call in &recording.calls {
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
            let needs_approval = matches!(t, AgentTool::Tool { tool, .. } if tool.needs_approval());
            AgentTool::Tool {
                tool: replay_tool(t.spec().clone(), needs_approval),
                validator: Arc::new(t.validator().clone()),
            }
        })
        .collect();
    let mut with_tools = agent.modified(|d| {
        d.model = Some(Arc::new(recording.model()));
        d.tools = tools;
        d.specs = d.tools.iter().map(|t| t.spec().clone()).collect();
    });
    if !extra.is_empty() {
        let def = with_tools
            .def()
            .with_source_tools(extra.values())
            .map_err(|e| failed(e.to_string()))?;
        with_tools = with_tools.modified(|d| *d = def);
    }
    Ok(with_tools)
}

/// The replay against the recording.
struct Report {
    calls: Vec<(ToolCall, Outcome, Outcome)>,
    recorded_end: Option<String>,
    replay_end: Option<String>,
    differences: usize,
}

fn compare(recording: &Recording, now: &Outcomes) -> Report {
    let calls: Vec<(ToolCall, Outcome, Outcome)> = recording
        .calls
        .iter()
        .map(|c| (c.clone(), recording.outcomes.of(&c.id), now.of(&c.id)))
        .collect();
    let mut differences = calls.iter().filter(|(_, was, is)| was != is).count();
    if recording.outcomes.end != now.end {
        differences += 1;
    }
    Report {
        calls,
        recorded_end: recording.outcomes.end.clone(),
        replay_end: now.end.clone(),
        differences,
    }
}

impl Report {
    fn print(&self, json: bool, run: &str, recording: &Recording) {
        if json {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .map(|(call, was, is)| {
                    json!({
                        "call_id": call.id,
                        "tool": call.name,
                        "arguments": call.arguments,
                        "recorded": was.json(),
                        "replay": is.json(),
                        "same": was == is,
                    })
                })
                .collect();
            outln!(
                "{}",
                json!({
                    "type": "replay",
                    "run_id": run,
                    "model_turns": recording.turns.len(),
                    "calls": calls,
                    "recorded_end": self.recorded_end,
                    "replay_end": self.replay_end,
                    "differences": self.differences,
                })
            );
            return;
        }
        outln!(
            "replay of run {run}: {} recorded model turn(s) played back; no model called, no tool run",
            recording.turns.len()
        );
        for (call, was, is) in &self.calls {
            let input: Value = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            let head = format!("→ {} {}", call.name, short_input(&call.name, &input));
            if was == is {
                outln!("  {head}   same: {}", was.line());
            } else {
                outln!("  {head}   DIFFERS");
                outln!("      recorded  {}", was.line());
                outln!("      replay    {}", is.line());
            }
        }
        let end = |e: &Option<String>| e.clone().unwrap_or_else(|| "did not end".into());
        if self.recorded_end == self.replay_end {
            outln!("  end   same: {}", end(&self.recorded_end));
        } else {
            outln!("  end   DIFFERS");
            outln!("      recorded  {}", end(&self.recorded_end));
            outln!("      replay    {}", end(&self.replay_end));
        }
        match self.differences {
            0 => outln!("the replay matches the recording"),
            n => outln!("{n} difference(s)"),
        }
    }
}
