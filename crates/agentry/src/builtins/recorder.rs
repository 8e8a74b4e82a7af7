//! [`Recorder`]: every event of a run, captured for assertions in tests.

use agentry_core::hooks::{
    Event, EventKind, Events, Hook, HookCtx, HookExt, HookRegistration, HookResult, IntoHook,
    events::*,
};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// One event as the [`Recorder`] saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The event.
    pub kind: EventKind,
    /// The agent it happened in (`parent/child` for a sub-agent).
    pub agent_path: String,
    /// What the event carried that tests usually check: the tool and input of BeforeTool; the
    /// tool, content, `is_error` and `mocked` of AfterTool; the text of TextDelta; the reason of
    /// Stop and RunEnd; `null` for the others.
    pub detail: Value,
}

/// Captures every event of the runs it is attached to (meta events aside), for assertions in
/// your own tests. Cloning it shares the record.
///
/// It registers at the highest priority, named `recorder`: it sees each `Before*` event first,
/// before any hook can block or answer it, and each `After*` event last, as the run will use it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry::Error> {
/// use agentry::builtins::{Recorder, ToolMocks};
/// use agentry::hooks::EventKind;
/// use agentry::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct City { city: String }
///
/// let recorder = Recorder::new();
/// let agent = Agent::builder("weather")
///     .model(ScriptedModel::new().tool_call("get_weather", json!({"city": "Oslo"})).text("Cold."))
///     .tool(tool("get_weather", "Weather", |_: City, _ctx: ToolCtx| async { Ok("real".to_string()) }))
///     .with(ToolMocks::new().result("get_weather", "snow, -3 C"))
///     .with(recorder.clone())
///     .build()?;
/// Runtime::new().run(&agent, "Weather in Oslo?").await?;
///
/// recorder.assert_tool_called("get_weather", &json!({"city": "Oslo"}));
/// recorder.assert_sequence(&[EventKind::RunStart, EventKind::BeforeTool, EventKind::AfterTool, EventKind::RunEnd]);
/// let result = recorder.of(EventKind::AfterTool)[0].detail.clone();
/// assert_eq!(result["content"], "snow, -3 C");
/// assert_eq!(result["mocked"], true);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Recorded>>>,
}

impl Recorder {
    /// An empty record.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Recorded> {
        self.lock().clone()
    }

    /// The kinds of the events so far, in order.
    pub fn kinds(&self) -> Vec<EventKind> {
        self.lock().iter().map(|r| r.kind).collect()
    }

    /// The events of one kind, in order.
    pub fn of(&self, kind: EventKind) -> Vec<Recorded> {
        self.lock()
            .iter()
            .filter(|r| r.kind == kind)
            .cloned()
            .collect()
    }

    /// The tool calls that reached BeforeTool, in order: (tool, input).
    pub fn tool_calls(&self) -> Vec<(String, Value)> {
        self.of(EventKind::BeforeTool)
            .into_iter()
            .map(|r| {
                (
                    r.detail["tool"].as_str().unwrap_or_default().to_owned(),
                    r.detail["input"].clone(),
                )
            })
            .collect()
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Panics unless `kinds` happened in this order (other events may come between them).
    #[track_caller]
    pub fn assert_sequence(&self, kinds: &[EventKind]) {
        let seen = self.kinds();
        let mut rest = seen.iter();
        for (i, kind) in kinds.iter().enumerate() {
            if !rest.any(|k| k == kind) {
                panic!(
                    "expected {kind:?} (item {} of {kinds:?}) after the ones before it, in the recorded events: {seen:?}",
                    i + 1
                );
            }
        }
    }

    /// Panics unless `tool` was called with `input`.
    #[track_caller]
    pub fn assert_tool_called(&self, tool: &str, input: &Value) {
        let calls = self.tool_calls();
        if !calls.iter().any(|(t, i)| t == tool && i == input) {
            panic!("expected a call of `{tool}` with {input}; the calls were: {calls:?}");
        }
    }

    /// Panics if `tool` was called.
    #[track_caller]
    pub fn assert_tool_not_called(&self, tool: &str) {
        let calls = self.tool_calls();
        if calls.iter().any(|(t, _)| t == tool) {
            panic!("expected no call of `{tool}`; the calls were: {calls:?}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record<E: Event>(&self, ctx: &HookCtx, detail: Value) {
        self.lock().push(Recorded {
            kind: E::KIND,
            agent_path: ctx.agent_path().to_owned(),
            // Masked by the run's redactor, when the runtime has one.
            detail: ctx.redact_value(detail),
        });
    }
}

/// Implements the recorder's handlers: each records its event with a detail and passes it on.
macro_rules! record_events {
    ($($method:ident($ty:ident) => |$ev:ident| $detail:expr;)*) => {
        $(
            fn $method(&self, $ev: $ty, ctx: &HookCtx) -> impl Future<Output = HookResult<$ty>> + Send {
                self.0.record::<$ty>(ctx, $detail);
                async move { Ok($ev) }
            }
        )*
    };
}

/// The recorder's hook (a plugin over every event).
struct RecorderHook(Recorder);

impl IntoHook for Recorder {
    fn into_hook(self) -> HookRegistration {
        RecorderHook(self).named("recorder").priority(i32::MAX)
    }
}

impl Hook for RecorderHook {
    fn wants(&self) -> Events {
        Events::all().difference(Events::META)
    }

    record_events! {
        run_start(RunStart) => |ev| Value::Null;
        run_end(RunEnd) => |ev| json!({"stop": ev.stop().to_string()});
        run_failed(RunFailed) => |ev| Value::Null;
        before_step(BeforeStep) => |ev| Value::Null;
        after_step(AfterStep) => |ev| Value::Null;
        stop(Stop) => |ev| json!({"reason": ev.reason().to_string()});
        before_model(BeforeModel) => |ev| Value::Null;
        after_model(AfterModel) => |ev| Value::Null;
        text_delta(TextDelta) => |ev| json!({"text": ev.text});
        thinking(Thinking) => |ev| Value::Null;
        before_tool(BeforeTool) => |ev| json!({"tool": ev.name(), "input": ev.input});
        after_tool(AfterTool) => |ev| json!({
            "tool": ev.name(), "content": ev.content,
            "is_error": ev.is_error, "mocked": ev.mocked()});
        tool_failed(ToolFailed) => |ev| Value::Null;
        before_sub_agent(BeforeSubAgent) => |ev| Value::Null;
        after_sub_agent(AfterSubAgent) => |ev| Value::Null;
        sub_agent_failed(SubAgentFailed) => |ev| Value::Null;
        approval_requested(ApprovalRequested) => |ev| json!({
            "tool": ev.pending().tool, "call_id": ev.pending().call_id, "input": ev.pending().input,
            "reason": ev.pending().reason});
        approval_resolved(ApprovalResolved) => |ev| json!({
            "call_id": ev.pending().call_id, "decision": ev.decision(),
            "by": match &ev.by() { Resolver::Person => "person".to_string(), Resolver::Hook(h) => h.clone() }});
        stopped_by_human(StoppedByHuman) => |ev| json!({"call_id": ev.call_id(), "reason": ev.reason()});
        before_compact(BeforeCompact) => |ev| json!({
            "tokens": ev.tokens(), "start": ev.plan.start, "end": ev.plan.end,
            "strategy": ev.plan.strategy.as_str()});
        after_compact(AfterCompact) => |ev| json!({"summary": ev.summary});
        compact_failed(CompactFailed) => |ev| json!({"error": ev.error().to_string()});
        state_change(StateChange) => |ev| Value::Null;
        message_added(MessageAdded) => |ev| Value::Null;
        custom(Custom) => |ev| Value::Null;
    }
}
