//! [`ToolMocks`]: tool results given without calling the tools, for tests and evals.

use agentry_core::hooks::{BeforeTool, HookExt, HookRegistration, IntoHook, on_sync};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A mocked tool's answer: fixed, or made from the call's input.
type Respond = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// Mocks tools by name: a BeforeTool hook that answers their calls itself, so the real tools
/// never run. The results are flagged `mocked` in the run's events and history.
///
/// It runs at priority 100: after the guards (a tool policy at 200 still blocks a denied tool)
/// and before the agent's own hooks. Named `tool-mocks`.
///
/// ```
/// use agentry::builtins::ToolMocks;
/// use serde_json::json;
///
/// let mocks = ToolMocks::new()
///     .result("get_weather", json!({"sky": "sunny", "high_c": 24}))
///     .respond("search", |input| format!("3 results for {}", input["query"]));
/// assert!(mocks.mocks("search"));
/// assert!(!mocks.mocks("book_hotel"));
/// ```
#[derive(Clone, Default)]
pub struct ToolMocks {
    by_tool: HashMap<String, Respond>,
}

impl std::fmt::Debug for ToolMocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut tools: Vec<&str> = self.by_tool.keys().map(String::as_str).collect();
        tools.sort_unstable();
        f.debug_struct("ToolMocks").field("tools", &tools).finish()
    }
}

impl ToolMocks {
    /// No tool mocked yet.
    pub fn new() -> Self {
        ToolMocks::default()
    }

    /// Every call of `tool` returns `result` (a string is sent as it is, any other JSON value as
    /// JSON text).
    pub fn result(self, tool: impl Into<String>, result: impl Into<Value>) -> Self {
        let content = match result.into() {
            Value::String(s) => s,
            other => other.to_string(),
        };
        self.respond(tool, move |_| content.clone())
    }

    /// Every call of `tool` returns what `respond` makes of the call's input.
    pub fn respond(
        mut self,
        tool: impl Into<String>,
        respond: impl Fn(&Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.by_tool.insert(tool.into(), Arc::new(respond));
        self
    }

    /// Whether calls of `tool` are mocked.
    pub fn mocks(&self, tool: &str) -> bool {
        self.by_tool.contains_key(tool)
    }

    fn answer(&self, ev: &mut BeforeTool) {
        if let Some(respond) = self.by_tool.get(ev.name()) {
            let content = respond(&ev.input);
            ev.mock(content);
        }
    }
}

impl IntoHook for ToolMocks {
    fn into_hook(self) -> HookRegistration {
        on_sync::before_tool(move |ev, _ctx| {
            self.answer(ev);
            Ok(())
        })
        .named("tool-mocks")
        .priority(100)
        .into_hook()
    }
}
