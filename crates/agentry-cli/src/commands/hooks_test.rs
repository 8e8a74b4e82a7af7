//! `agentry hooks test EVENT --input FILE.json`: the configured hooks of one agent run on a
//! sample event, and each hook's decision and time printed.
//!
//! The sample is what a Claude Code hook script reads on stdin for that event (`tool_name`,
//! `tool_input`, `tool_response`, `error`, `prompt`, `last_assistant_message`), so the payload a
//! script was written against tests it here. The event goes through the same dispatch a run
//! uses (`Hooks::dispatch_traced`), with the runtime's hooks and the agent's.

use super::{Failure, failed, open};
use crate::cli::Cli;
use crate::exit::Exit;
use agentry::agent::{CompactPlan, CompactStrategy};
use agentry::hooks::{
    AfterCompact, AfterTool, AfterToolBatch, ApprovalRequested, BeforeCompact, BeforeSubAgent,
    BeforeTool, Event, HookStep, Hooks, RunStart, Stop, ToolDecision, ToolFailed, Traced,
};
use agentry::{
    Decision, Notice, PendingApproval, RunContext, RunContextSpec, RunEngine, RunInfo, StopReason,
    ToolResult,
};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The events `hooks test` takes: (agentry name, Claude Code name), in the order help lists them.
const EVENTS: &[(&str, &str)] = &[
    ("BeforeTool", "PreToolUse"),
    ("AfterTool", "PostToolUse"),
    ("ToolFailed", "PostToolUseFailure"),
    ("RunStart", "UserPromptSubmit"),
    ("Stop", "Stop"),
    ("the Stop of a sub-agent", "SubagentStop"),
    ("ApprovalRequested", "PermissionRequest"),
    ("ApprovalRequested", "Notification"),
    ("RunStart of a session's first run", "SessionStart"),
    ("the end of a session", "SessionEnd"),
    ("BeforeSubAgent", "SubagentStart"),
    ("AfterToolBatch", "PostToolBatch"),
    ("BeforeCompact", "PreCompact"),
    ("AfterCompact", "PostCompact"),
];

/// `agentry hooks test`.
pub(super) async fn test(
    cli: &Cli,
    event: &str,
    input: Option<&Path>,
    agent: Option<&str>,
) -> Result<Exit, Failure> {
    let sample = read_sample(input)?;
    // No model is loaded: nothing but the hooks runs.
    let project = open(cli, true).await?;
    let agent = project.agent(agent).map_err(failed)?;
    let hooks = Hooks::merge(&[project.runtime.hooks(), &agent.def().hooks]);
    let sub_agent = event == "SubagentStop";
    let engine = context(&agent.def().name, sub_agent, &sample);
    let ctx = engine.context().clone();
    let report = match event {
        "SessionEnd" => {
            let session = text(&sample, "session_id").unwrap_or("hooks-test");
            let reason = text(&sample, "reason").unwrap_or("other");
            let fields = sample_fields(&sample);
            let mut ran = 0;
            let mut failures = Vec::new();
            for sessions in project.sessions.iter().filter(|s| s.acts_on(agent.name())) {
                ran += 1;
                if let Err(e) = sessions.end_sample(session, reason, &fields).await {
                    failures.push(e.to_string());
                }
            }
            if cli.json {
                outln!(
                    "{}",
                    json!({"event": event, "hook_sets": ran, "reason": reason, "error": failures.first()})
                );
            } else {
                outln!("{event} ({reason}): {ran} set(s) of command hooks ran");
                for failure in &failures {
                    outln!("result: the hooks failed: {failure}");
                }
            }
            return Ok(if failures.is_empty() {
                Exit::Ok
            } else {
                Exit::Failed
            });
        }
        "BeforeTool" | "PreToolUse" => {
            let ev = BeforeTool::new(call_id(&sample), tool_name(&sample)?, tool_input(&sample));
            Report::trace(&hooks, ev, &ctx).await
        }
        "AfterTool" | "PostToolUse" => {
            let content = match sample.get("tool_response") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let result = ToolResult::ok(call_id(&sample), tool_name(&sample)?, content);
            let ev = AfterTool::new(tool_input(&sample), result);
            Report::trace(&hooks, ev, &ctx).await
        }
        "ToolFailed" | "ToolError" | "PostToolUseFailure" => {
            let error = text(&sample, "error")
                .unwrap_or("the tool failed")
                .to_owned();
            let ev = ToolFailed::new(
                call_id(&sample),
                tool_name(&sample)?,
                tool_input(&sample),
                error,
            );
            Report::trace(&hooks, ev, &ctx).await
        }
        "RunStart" | "UserPromptSubmit" | "SessionStart" => {
            let ev = RunStart {
                input: text(&sample, "prompt").unwrap_or_default().into(),
            };
            Report::trace(&hooks, ev, &ctx).await
        }
        "Stop" | "SubagentStop" => {
            let ev = match text(&sample, "last_assistant_message") {
                Some(last) => Stop::with_output(StopReason::FinalAnswer, 1, json!(last)),
                None => Stop::new(StopReason::FinalAnswer, 1),
            };
            Report::trace(&hooks, ev, &ctx).await
        }
        "BeforeSubAgent" | "SubagentStart" => {
            let ev = BeforeSubAgent::new(
                text(&sample, "agent_type").unwrap_or("helper").to_owned(),
                call_id(&sample),
                text(&sample, "prompt").unwrap_or_default().to_owned(),
            );
            Report::trace(&hooks, ev, &ctx).await
        }
        "AfterToolBatch" | "PostToolBatch" => {
            let calls = match sample.get("tool_calls") {
                Some(Value::Array(calls)) => calls.clone(),
                _ => Vec::new(),
            };
            let results = calls
                .iter()
                .map(|c| {
                    let name = c["tool_name"].as_str().unwrap_or("tool");
                    let id = c["tool_use_id"].as_str().unwrap_or("toolu_hooks_test");
                    let content = match &c["tool_response"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    ToolResult::ok(id, name, content)
                })
                .collect();
            Report::trace(&hooks, AfterToolBatch::new(results), &ctx).await
        }
        "BeforeCompact" | "PreCompact" => {
            let ev = BeforeCompact::new(0, 0, agentry::History::default(), compact_plan());
            Report::trace(&hooks, ev, &ctx).await
        }
        "AfterCompact" | "PostCompact" => {
            let summary = text(&sample, "compact_summary").unwrap_or_default();
            let ev = AfterCompact::new(compact_plan(), 0, summary.to_owned());
            Report::trace(&hooks, ev, &ctx).await
        }
        "ApprovalRequested" | "PermissionRequest" | "Notification" => {
            let ev = ApprovalRequested::new(PendingApproval {
                call_id: call_id(&sample),
                tool: tool_name(&sample)?,
                input: tool_input(&sample),
                reason: text(&sample, "reason")
                    .unwrap_or("the tool needs approval")
                    .to_owned(),
            });
            Report::trace(&hooks, ev, &ctx).await
        }
        other => {
            let names: Vec<String> = EVENTS
                .iter()
                .map(|(ours, claude)| match ours.starts_with(claude) {
                    true => claude.to_string(),
                    false => format!("{claude} ({ours})"),
                })
                .collect();
            return Err((
                Exit::Usage,
                format!(
                    "`{other}` is not an event `hooks test` takes; it takes: {}",
                    names.join(", ")
                ),
            ));
        }
    };
    let stop = ctx.stop_deadline().map(|(_, reason)| reason.to_string());
    let report = report.with_notices(engine.take_notices());
    report.print(cli.json, event, stop.as_deref());
    Ok(if report.error.is_some() {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

/// The sample event: a JSON object from a file, or from stdin when the path is `-`; `{}` when
/// none is given.
fn read_sample(input: Option<&Path>) -> Result<Map<String, Value>, Failure> {
    let text = match input {
        None => return Ok(Map::new()),
        Some(p) if p == Path::new("-") => std::io::read_to_string(std::io::stdin())
            .map_err(|e| failed(format!("cannot read the sample from stdin: {e}")))?,
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| failed(format!("cannot read {}: {e}", p.display())))?,
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err((
            Exit::Usage,
            "the sample must be a JSON object, as a hook script reads it on stdin \
             (e.g. {\"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"ls\"}})"
                .into(),
        )),
        Err(e) => Err((Exit::Usage, format!("the sample is not JSON: {e}"))),
    }
}

/// The plan of a compaction that folds nothing, for the sample's compaction events.
fn compact_plan() -> CompactPlan {
    CompactPlan {
        strategy: CompactStrategy::Summarize,
        start: 0,
        end: 0,
    }
}

fn text<'a>(sample: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    sample.get(key).and_then(Value::as_str)
}

fn tool_name(sample: &Map<String, Value>) -> Result<String, Failure> {
    text(sample, "tool_name").map(str::to_owned).ok_or_else(|| {
        (
            Exit::Usage,
            "the sample needs a `tool_name` (and usually a `tool_input`), as a hook script reads it"
                .into(),
        )
    })
}

fn tool_input(sample: &Map<String, Value>) -> Value {
    sample.get("tool_input").cloned().unwrap_or(json!({}))
}

fn call_id(sample: &Map<String, Value>) -> String {
    text(sample, "tool_use_id")
        .unwrap_or("toolu_hooks_test")
        .to_owned()
}

/// The fields of a sample that command hooks get as they are, not from the event: where the
/// transcript is, whether a Stop hook is already active, what started or ended the session.
const SAMPLE_FIELDS: &[&str] = &[
    "transcript_path",
    "stop_hook_active",
    "source",
    "reason",
    "trigger",
    "permission_mode",
    "cwd",
    "custom_instructions",
    "notification_type",
    "message",
];

/// The sample's fields command hooks get as they are ([`SAMPLE_FIELDS`]).
fn sample_fields(sample: &Map<String, Value>) -> Map<String, Value> {
    sample
        .iter()
        .filter(|(k, _)| SAMPLE_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The sample's run: a run of its own, top-level unless `sub_agent`, in the sample's session
/// (`session_id`) when it names one, whose command hooks get the sample's own fields.
fn context(agent: &str, sub_agent: bool, sample: &Map<String, Value>) -> RunEngine {
    let session = text(sample, "session_id");
    let mut metadata = Map::new();
    let fields = sample_fields(sample);
    if !fields.is_empty() {
        metadata.insert(
            agentry_external::SAMPLE_FIELDS.to_owned(),
            Value::Object(fields),
        );
    }
    RunEngine::new(RunContextSpec {
        parent_run_id: sub_agent.then(|| "hooks-test-parent".into()),
        info: Arc::new(RunInfo {
            session_id: Some(session.unwrap_or("hooks-test").to_owned()),
            metadata,
            ..RunInfo::default()
        }),
        step: 1,
        depth: u32::from(sub_agent),
        ..RunContextSpec::new("hooks-test", agent)
    })
}

/// What an event shows of itself: the parts hooks may change, by name.
trait Shown: Event {
    fn shown(&self) -> Map<String, Value>;
}

impl Shown for BeforeTool {
    fn shown(&self) -> Map<String, Value> {
        let decision = match self.decision() {
            None => Value::Null,
            Some(ToolDecision::Block(r)) => json!({"block": r}),
            Some(ToolDecision::Mock(c)) => json!({"mock": c}),
            Some(ToolDecision::NeedsApproval(r)) => json!({"ask": r}),
        };
        object([
            ("input", self.input.clone()),
            ("decision", decision),
            ("allowed", json!(self.allowed())),
        ])
    }
}

impl Shown for AfterTool {
    fn shown(&self) -> Map<String, Value> {
        object([
            ("content", json!(self.content)),
            ("is_error", json!(self.is_error)),
        ])
    }
}

impl Shown for ToolFailed {
    fn shown(&self) -> Map<String, Value> {
        object([
            ("recovery", json!(self.recovery())),
            ("error shown", json!(self.rewritten_error())),
        ])
    }
}

impl Shown for RunStart {
    fn shown(&self) -> Map<String, Value> {
        object([("input", json!(self.input))])
    }
}

impl Shown for Stop {
    fn shown(&self) -> Map<String, Value> {
        object([("veto", json!(self.vetoed()))])
    }
}

impl Shown for BeforeSubAgent {
    fn shown(&self) -> Map<String, Value> {
        object([("input", json!(self.input))])
    }
}

impl Shown for AfterToolBatch {
    fn shown(&self) -> Map<String, Value> {
        Map::new()
    }
}

impl Shown for BeforeCompact {
    fn shown(&self) -> Map<String, Value> {
        object([("veto", json!(self.vetoed()))])
    }
}

impl Shown for AfterCompact {
    fn shown(&self) -> Map<String, Value> {
        object([("summary", json!(self.summary))])
    }
}

impl Shown for ApprovalRequested {
    fn shown(&self) -> Map<String, Value> {
        let decision = match self.decision() {
            None => Value::Null,
            Some(Decision::Approve { .. }) => json!("approve"),
            Some(other) => serde_json::to_value(other).unwrap_or(Value::Null),
        };
        object([("decision", decision)])
    }
}

fn object<const N: usize>(fields: [(&str, Value); N]) -> Map<String, Value> {
    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// One hook's line of the report.
struct Line {
    hook: String,
    took: Duration,
    read_only: bool,
    decided: bool,
    advisory: bool,
    failure: Option<String>,
    /// What the hook changed: each changed part, as it left it.
    changed: Map<String, Value>,
}

/// The report of a traced dispatch.
struct Report {
    before: Map<String, Value>,
    lines: Vec<Line>,
    /// The event as the hooks left it.
    after: Map<String, Value>,
    /// The hook whose decision stands.
    decided_by: Option<String>,
    /// The error that failed the dispatch.
    error: Option<String>,
    /// Handlers of a hook that failed while the hook went on (a command that exited 1, could
    /// not start, timed out or printed what is not the protocol): `handler: error`.
    handler_failures: Vec<String>,
    /// What hooks said for the person (`systemMessage`), and other events they emitted.
    messages: Vec<String>,
}

impl Report {
    /// Runs `ev` through `hooks`, traced.
    async fn trace<E: Shown>(hooks: &Hooks, ev: E, ctx: &RunContext) -> Report {
        let before = ev.shown();
        let traced = hooks.dispatch_traced(ev, ctx).await;
        Report::of(before, &traced)
    }

    fn of<E: Shown>(before: Map<String, Value>, traced: &Traced<E>) -> Report {
        let mut lines = Vec::new();
        let mut prev = before.clone();
        for step in &traced.steps {
            let now = step.after.shown();
            lines.push(line(step, diff(&prev, &now)));
            prev = now;
        }
        let (after, decided_by, error) = match &traced.outcome {
            Ok((ev, by)) => (ev.shown(), by.as_ref().map(ToString::to_string), None),
            Err(e) => (prev, None, Some(e.to_string())),
        };
        Report {
            before,
            lines,
            after,
            decided_by,
            error,
            handler_failures: Vec::new(),
            messages: Vec::new(),
        }
    }

    /// The report with what the hooks left to report besides the event.
    fn with_notices(mut self, notices: Vec<Notice>) -> Report {
        for notice in notices {
            match notice {
                Notice::HookFailed { error, .. } => self.handler_failures.push(error),
                Notice::Custom { name, data } if name == "system_message" => {
                    let hook = data["hook"].as_str().unwrap_or_default();
                    let message = data["message"].as_str().unwrap_or_default();
                    self.messages.push(format!("{hook}: {message}"));
                }
                Notice::Custom { name, data } => self.messages.push(format!("[{name}] {data}")),
                Notice::State { .. } => {}
            }
        }
        self
    }

    fn print(&self, json: bool, event: &str, stop: Option<&str>) {
        if json {
            let hooks: Vec<Value> = self
                .lines
                .iter()
                .map(|l| {
                    json!({
                        "hook": l.hook,
                        "took_ms": l.took.as_secs_f64() * 1000.0,
                        "read_only": l.read_only,
                        "decided": l.decided,
                        "advisory": l.advisory,
                        "failure": l.failure,
                        "changed": l.changed,
                    })
                })
                .collect();
            outln!(
                "{}",
                json!({
                    "event": event,
                    "hooks": hooks,
                    "result": self.after,
                    "decided_by": self.decided_by,
                    "stops_run": stop,
                    "error": self.error,
                    "handler_failures": self.handler_failures,
                    "messages": self.messages,
                })
            );
            return;
        }
        outln!("{event}: {} hook(s) ran", self.lines.len());
        let width = self.lines.iter().map(|l| l.hook.len()).max().unwrap_or(0);
        for l in &self.lines {
            outln!(
                "  {:width$}  {:>9}  {}",
                l.hook,
                format!("{:.2} ms", l.took.as_secs_f64() * 1000.0),
                l.what()
            );
        }
        match (&self.error, &self.decided_by) {
            (Some(e), _) => outln!("result: the hooks failed: {e}"),
            (None, Some(by)) => outln!("result: decided by {by}: {}", parts(&self.after)),
            (None, None) if self.after != self.before => {
                outln!("result: {}", parts(&diff(&self.before, &self.after)))
            }
            (None, None) => outln!("result: no change"),
        }
        for failure in &self.handler_failures {
            outln!("warning: {failure} (the event goes on)");
        }
        for message in &self.messages {
            outln!("message: {message}");
        }
        if let Some(reason) = stop {
            outln!("the run would stop: {reason}");
        }
    }
}

fn line<E: Shown>(step: &HookStep<E>, changed: Map<String, Value>) -> Line {
    Line {
        hook: step.hook.to_string(),
        took: step.took,
        read_only: step.read_only,
        decided: step.decided,
        advisory: step.advisory,
        failure: step.failure.clone(),
        changed,
    }
}

impl Line {
    fn what(&self) -> String {
        if let Some(f) = &self.failure {
            return if self.advisory {
                format!("failed (advisory, the event goes on as it was): {f}")
            } else {
                format!("failed: {f}")
            };
        }
        if self.read_only {
            return "saw it read-only (an earlier hook decided)".into();
        }
        let mut what = if self.changed.is_empty() {
            "no change".to_owned()
        } else {
            parts(&self.changed)
        };
        if self.decided {
            what.push_str("  (this decision stands)");
        }
        what
    }
}

/// The parts of `after` that differ from `before`.
fn diff(before: &Map<String, Value>, after: &Map<String, Value>) -> Map<String, Value> {
    after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A value as the report shows it: a string without quotes, `{"block": "why"}` as
/// `block: why`, anything else as compact JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) if m.len() == 1 => {
            let (k, inner) = m.iter().next().expect("one entry");
            format!("{k}: {}", plain(inner))
        }
        other => other.to_string(),
    }
}

/// `key → value; ...`, the parts that are set.
fn parts(map: &Map<String, Value>) -> String {
    let shown: Vec<String> = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| format!("{k} → {}", crate::render::cut_line(&plain(v))))
        .collect();
    if shown.is_empty() {
        "no decision".into()
    } else {
        shown.join("; ")
    }
}
