//! Shared helpers for the hook integration tests: an event recorder (a `Hook` plugin that wants
//! every event and writes one line per event into a shared log), closure hooks that only leave a
//! mark, and small tools.
#![allow(dead_code)]

use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{History, Message, StateSource, Tool, ToolFailure, ToolResult};
use std::future::Ready;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A log shared by hooks, tools and the test.
pub type Log = Arc<Mutex<Vec<String>>>;

/// A new, empty log.
pub fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// A copy of what the log holds.
pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// Appends a line.
pub fn push(log: &Log, line: impl Into<String>) {
    log.lock().unwrap().push(line.into());
}

/// Every event with a payload except the meta events (which observe hooks) and the around
/// middleware.
pub fn lifecycle() -> Events {
    Events::all() - Events::META - Events::AROUND_MODEL - Events::AROUND_TOOL
}

/// Lifecycle events without the streamed ones (TextDelta, Thinking).
pub fn lifecycle_unstreamed() -> Events {
    lifecycle() - Events::TEXT_DELTA - Events::THINKING
}

/// The role of a message, lowercase.
pub fn role(m: &Message) -> &'static str {
    match m {
        Message::System { .. } => "system",
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool(_) => "tool",
    }
}

fn source(s: &StateSource) -> String {
    match s {
        StateSource::Tool(n) => format!("tool:{n}"),
        StateSource::Hook(n) => format!("hook:{n}"),
        StateSource::System => "system".into(),
    }
}

/// A hook plugin that records every event it wants as `EventName` or `EventName:detail`, prefixed
/// with its tag and the run's agent path when asked to.
#[derive(Clone)]
pub struct Recorder {
    log: Log,
    events: Events,
    tag: Option<String>,
    path: bool,
}

impl Recorder {
    /// Records every lifecycle event (streamed ones included) into `log`.
    pub fn new(log: &Log) -> Self {
        Recorder {
            log: log.clone(),
            events: lifecycle(),
            tag: None,
            path: false,
        }
    }

    /// Records only `events`.
    pub fn events(mut self, events: Events) -> Self {
        self.events = events;
        self
    }

    /// Prefixes every line with `tag` (and names the hook after it).
    pub fn tagged(mut self, tag: &str) -> Self {
        self.tag = Some(tag.to_string());
        self
    }

    /// Prefixes every line with the agent path of the run (`parent`, `parent/child`).
    pub fn with_path(mut self) -> Self {
        self.path = true;
        self
    }

    fn rec(&self, ctx: &HookCtx, what: String) {
        let mut line = String::new();
        if let Some(tag) = &self.tag {
            line.push_str(tag);
            line.push(' ');
        }
        if self.path {
            line.push_str(ctx.agent_path());
            line.push(' ');
        }
        line.push_str(&what);
        push(&self.log, line);
    }
}

impl Hook for Recorder {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        self.tag.clone().unwrap_or_else(|| "recorder".into()).into()
    }

    fn wants(&self) -> Events {
        self.events
    }

    async fn run_start(&self, ev: RunStart, ctx: &HookCtx) -> HookResult<RunStart> {
        self.rec(ctx, "RunStart".into());
        Ok(ev)
    }
    async fn run_end(&self, ev: RunEnd, ctx: &HookCtx) -> HookResult<RunEnd> {
        self.rec(ctx, "RunEnd".into());
        Ok(ev)
    }
    async fn run_failed(&self, ev: RunFailed, ctx: &HookCtx) -> HookResult<RunFailed> {
        self.rec(ctx, "RunFailed".into());
        Ok(ev)
    }
    async fn before_step(&self, ev: BeforeStep, ctx: &HookCtx) -> HookResult<BeforeStep> {
        self.rec(ctx, format!("BeforeStep:{}", ev.step()));
        Ok(ev)
    }
    async fn after_step(&self, ev: AfterStep, ctx: &HookCtx) -> HookResult<AfterStep> {
        self.rec(ctx, format!("AfterStep:{}", ev.step()));
        Ok(ev)
    }
    async fn stop(&self, ev: Stop, ctx: &HookCtx) -> HookResult<Stop> {
        self.rec(ctx, format!("Stop:{:?}", ev.reason()));
        Ok(ev)
    }
    async fn before_model(&self, ev: BeforeModel, ctx: &HookCtx) -> HookResult<BeforeModel> {
        self.rec(ctx, "BeforeModel".into());
        Ok(ev)
    }
    async fn after_model(&self, ev: AfterModel, ctx: &HookCtx) -> HookResult<AfterModel> {
        self.rec(ctx, "AfterModel".into());
        Ok(ev)
    }
    async fn text_delta(&self, ev: TextDelta, ctx: &HookCtx) -> HookResult<TextDelta> {
        self.rec(ctx, format!("TextDelta:{}", ev.text));
        Ok(ev)
    }
    async fn thinking(&self, ev: Thinking, ctx: &HookCtx) -> HookResult<Thinking> {
        self.rec(ctx, format!("Thinking:{}", ev.text));
        Ok(ev)
    }
    async fn before_tool(&self, ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        self.rec(ctx, format!("BeforeTool:{}", ev.name()));
        Ok(ev)
    }
    async fn after_tool(&self, ev: AfterTool, ctx: &HookCtx) -> HookResult<AfterTool> {
        self.rec(ctx, format!("AfterTool:{}", ev.name()));
        Ok(ev)
    }
    async fn tool_failed(&self, ev: ToolFailed, ctx: &HookCtx) -> HookResult<ToolFailed> {
        self.rec(ctx, format!("ToolFailed:{}", ev.name()));
        Ok(ev)
    }
    async fn before_sub_agent(
        &self,
        ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> HookResult<BeforeSubAgent> {
        self.rec(ctx, format!("BeforeSubAgent:{}", ev.agent()));
        Ok(ev)
    }
    async fn after_sub_agent(&self, ev: AfterSubAgent, ctx: &HookCtx) -> HookResult<AfterSubAgent> {
        self.rec(ctx, format!("AfterSubAgent:{}", ev.agent()));
        Ok(ev)
    }
    async fn sub_agent_failed(
        &self,
        ev: SubAgentFailed,
        ctx: &HookCtx,
    ) -> HookResult<SubAgentFailed> {
        self.rec(ctx, format!("SubAgentFailed:{}", ev.agent()));
        Ok(ev)
    }
    async fn state_change(&self, ev: StateChange, ctx: &HookCtx) -> HookResult<StateChange> {
        self.rec(ctx, format!("StateChange:{}", source(ev.source())));
        Ok(ev)
    }
    async fn message_added(&self, ev: MessageAdded, ctx: &HookCtx) -> HookResult<MessageAdded> {
        self.rec(ctx, format!("MessageAdded:{}", role(ev.message())));
        Ok(ev)
    }
    async fn custom(&self, ev: Custom, ctx: &HookCtx) -> HookResult<Custom> {
        self.rec(ctx, format!("Custom:{}", ev.name()));
        Ok(ev)
    }
    async fn hook_started(&self, ev: HookStarted, ctx: &HookCtx) -> HookResult<HookStarted> {
        self.rec(ctx, format!("HookStarted:{}:{}", ev.hook(), ev.event()));
        Ok(ev)
    }
    async fn hook_finished(&self, ev: HookFinished, ctx: &HookCtx) -> HookResult<HookFinished> {
        self.rec(ctx, format!("HookFinished:{}:{}", ev.hook(), ev.event()));
        Ok(ev)
    }
    async fn hook_failed(&self, ev: HookFailed, ctx: &HookCtx) -> HookResult<HookFailed> {
        let policy = if ev.advisory() { "advisory" } else { "fatal" };
        self.rec(
            ctx,
            format!("HookFailed:{}:{}:{}", ev.hook(), ev.event(), policy),
        );
        Ok(ev)
    }
}

/// The body of a closure hook that only appends `line` to `log`:
/// `on::before_model(mark(&log, "a"))`.
pub fn mark<E: Send + 'static>(
    log: &Log,
    line: &str,
) -> impl Fn(E, HookCtx) -> Ready<HookResult<E>> + Send + Sync + 'static {
    let log = log.clone();
    let line = line.to_string();
    move |ev, _ctx| {
        push(&log, line.clone());
        std::future::ready(Ok(ev))
    }
}

/// A counter shared with hooks and tools.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    /// Adds one and returns the new count.
    pub fn bump(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    /// The count.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// The input of the weather tool.
#[derive(Deserialize, JsonSchema)]
pub struct City {
    /// The city.
    pub city: String,
}

/// A tool that answers `Sunny in <city>`, counting its calls and logging `tool:<city>`.
pub fn weather(log: &Log, calls: &Counter) -> impl Tool + use<> {
    let log = log.clone();
    let calls = calls.clone();
    tool(
        "get_weather",
        "Current weather for a city",
        move |a: City, _ctx: ToolCtx| {
            let log = log.clone();
            let calls = calls.clone();
            async move {
                calls.bump();
                push(&log, format!("tool:{}", a.city));
                Ok::<_, ToolFailure>(format!("Sunny in {}", a.city))
            }
        },
    )
}

/// The text of the tool result messages of a history, in order.
pub fn tool_results(messages: &History) -> Vec<ToolResult> {
    messages
        .iter()
        .filter_map(|m| m.tool_result().cloned())
        .collect()
}
