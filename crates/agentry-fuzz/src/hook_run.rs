//! A run of an agent whose hooks are one handler (a command or a webhook) on one event, so that
//! what the handler answers is read and applied as that event's decision: what the two hook
//! targets share.

use crate::support::{PATIENCE, runtime};
use agentry::{Agent, ModelRequest, Runtime, ScriptedModel, ScriptedTurn, ToolFailure, tool};
use agentry_external::{CommandHooks, HookSettings};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The events a handler is registered on, picked by a byte of the input: Claude Code's names
/// and agentry's own.
pub(crate) const EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "PermissionRequest",
    "Notification",
    "SessionStart",
    "SessionEnd",
    "PostToolBatch",
    "RunStart",
    "RunEnd",
    "BeforeStep",
    "AfterStep",
    "BeforeModel",
    "AfterModel",
    "BeforeTool",
    "AfterTool",
    "ToolFailed",
    "ApprovalRequested",
    "MessageAdded",
    "BeforeToolBatch",
    "Stop",
    "PreToolUse",
];

/// The events whose run asks for an approval.
fn asks_approval(event: &str) -> bool {
    matches!(
        event,
        "PermissionRequest" | "Notification" | "ApprovalRequested"
    )
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// An agent whose model calls `echo` and `second` in its first turn, then answers `done`; its
/// `second` tool fails, or needs an approval.
fn agent(approval: bool) -> &'static Agent {
    static PLAIN: OnceLock<Agent> = OnceLock::new();
    static GUARDED: OnceLock<Agent> = OnceLock::new();
    let build = move || {
        let model = ScriptedModel::from_fn(|_, request: &ModelRequest| {
            if request.messages.iter().any(|m| m.tool_result().is_some()) {
                ScriptedTurn::text("done")
            } else {
                ScriptedTurn::new()
                    .with_text("Tidying.")
                    .with_tool_call("echo", json!({"text": "hi"}))
                    .with_tool_call("second", json!({}))
            }
        });
        let echo = tool("echo", "Says it back", |a: Echo, _| async move {
            Ok::<_, ToolFailure>(a.text)
        });
        let builder = Agent::builder("tidy").model(model).tool(echo).max_steps(4);
        let builder = if approval {
            builder.tool(
                tool("second", "Deletes the logs", |_: Nothing, _| async {
                    Ok::<_, ToolFailure>("deleted")
                })
                .needs_approval(),
            )
        } else {
            builder.tool(tool("second", "Fails", |_: Nothing, _| async {
                Err::<String, _>(ToolFailure::new("the disk is full"))
            }))
        };
        builder.build().expect("the agent")
    };
    if approval {
        GUARDED.get_or_init(build)
    } else {
        PLAIN.get_or_init(build)
    }
}

/// The directory hooks run in and keep their transcripts in, emptied now and then.
pub(crate) fn state_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static RUNS: AtomicU32 = AtomicU32::new(0);
    let dir = DIR.get_or_init(|| {
        std::env::temp_dir().join(format!("agentry-fuzz-hooks-{}", std::process::id()))
    });
    if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(256) {
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::create_dir_all(dir);
    dir
}

/// Runs the agent with `handler` registered on `event`; panics if the run does not end in
/// time.
pub(crate) fn run_with_handler(event: &str, handler: Value) {
    let settings = json!({"hooks": {event: [{"hooks": [handler]}]}});
    let settings = HookSettings::from_value(&settings).expect("the handler's settings");
    let dir = state_dir();
    let hooks = CommandHooks::new(settings).project_dir(dir).state_dir(dir);
    let agent = agent(asks_approval(event));
    runtime().block_on(async {
        let runtime = Runtime::new().with(hooks);
        let run = runtime.run(agent, "Tidy the logs");
        // Failing is an outcome like any other; hanging is not.
        let outcome = tokio::time::timeout(PATIENCE, run)
            .await
            .expect("a run whose hook answered ends in time");
        crate::support::debug(event, &outcome.map(|out| (out.stop, out.output)));
    });
}
