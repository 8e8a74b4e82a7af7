//! The agents the tests run, in-process and on Temporal alike, and the hooks that record what
//! they saw and decided.

use agentry::prelude::*;
use agentry::{Message, ModelRequest, ScriptedTurn};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the hooks saw and decided, in order.
pub type Log = Arc<Mutex<Vec<String>>>;

#[derive(Deserialize, JsonSchema)]
struct Sum {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// How many tool results the request's history holds.
pub fn results_in(req: &ModelRequest) -> usize {
    req.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count()
}

/// An agent with tools, a sub-agent and (in `runtime`) hooks of every phase: step 1 calls `add`
/// and `echo`, step 2 the `helper` sub-agent and `secret` (which a hook blocks), step 3
/// answers. `executions` counts tool executions.
pub fn assistant(log: &Log, executions: &Arc<AtomicUsize>) -> (Agent, Runtime) {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        0 => ScriptedTurn::new()
            .with_text("Let me compute.")
            .with_tool_call_id("c1", "add", json!({"a": 2, "b": 3}))
            .with_tool_call_id("c2", "echo", json!({"text": "hi"}))
            .with_usage(10, 5),
        2 => ScriptedTurn::new()
            .with_tool_call_id("c3", "helper", json!({"input": "summarise"}))
            .with_tool_call_id("c4", "secret", json!({}))
            .with_usage(20, 5),
        _ => ScriptedTurn::text("the answer is 5").with_usage(30, 4),
    });
    let helper = Agent::builder("helper")
        .description("Summarises.")
        .model(ScriptedModel::from_fn(|_, req| {
            let asked = req.messages.last().map(|m| m.text().to_string());
            ScriptedTurn::text(format!("helped with {}", asked.unwrap_or_default()))
        }))
        .build()
        .unwrap();
    let n = executions.clone();
    let add = tool("add", "Adds two numbers.", move |a: Sum, _ctx: ToolCtx| {
        n.fetch_add(1, Ordering::SeqCst);
        async move { Ok((a.a + a.b).to_string()) }
    });
    let n = executions.clone();
    let echo = tool("echo", "Echoes.", move |a: Text, _ctx: ToolCtx| {
        n.fetch_add(1, Ordering::SeqCst);
        async move { Ok(a.text) }
    });
    let n = executions.clone();
    let secret = tool(
        "secret",
        "Tells a secret.",
        move |_: Nothing, _ctx: ToolCtx| {
            n.fetch_add(1, Ordering::SeqCst);
            async move { Ok("the secret") }
        },
    );
    let agent = Agent::builder("assistant")
        .instructions("Be brief.")
        .model(model)
        .tool(add)
        .tool(echo)
        .tool(secret)
        .sub_agent(&helper)
        .parallel_tool_calls(false)
        .build()
        .unwrap();
    (agent, recording_runtime(log))
}

/// Where a recording runtime's lines go.
pub type Sink = Arc<dyn Fn(String) + Send + Sync>;

/// A runtime whose hooks log every phase and decide: RunStart rewrites the input, BeforeTool
/// blocks `secret`, AfterTool upper-cases `echo`'s result.
pub fn recording_runtime(log: &Log) -> Runtime {
    let log = log.clone();
    recording_runtime_to(Arc::new(move |line| log.lock().unwrap().push(line)))
}

/// [`recording_runtime`], each line appended to the file `path` as it happens (for runs whose
/// process is killed).
pub fn file_recording_runtime(path: &std::path::Path) -> Runtime {
    let path = path.to_path_buf();
    recording_runtime_to(Arc::new(move |line| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }))
}

/// [`recording_runtime`], its lines sent to `log`.
pub fn recording_runtime_to(log: Sink) -> Runtime {
    let push = |log: &Sink, line: String| log(line);
    Runtime::new()
        .with(
            on::with(log.clone()).run_start(move |log, mut ev, ctx| async move {
                ev.input.push_str(" please");
                push(&log, format!("RunStart {} {}", ctx.agent_path(), ev.input));
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).before_step(move |log, ev, ctx| async move {
                push(
                    &log,
                    format!("BeforeStep {} {}", ctx.agent_path(), ev.step()),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).before_model(move |log, ev, ctx| async move {
                push(
                    &log,
                    format!("BeforeModel {} step {}", ctx.agent_path(), ctx.step()),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).message_added(move |log, ev, ctx| async move {
                push(
                    &log,
                    format!(
                        "MessageAdded {} {:?}",
                        ctx.agent_path(),
                        ev.message().role()
                    ),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).before_tool(move |log, mut ev, ctx| async move {
                if ev.name() == "secret" {
                    ev.block("no secrets");
                }
                push(
                    &log,
                    format!("BeforeTool {} {} {}", ctx.agent_path(), ev.name(), ev.input),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).after_tool(move |log, mut ev, ctx| async move {
                if ev.name() == "echo" {
                    ev.content = ev.content.text().to_uppercase().into();
                }
                push(
                    &log,
                    format!(
                        "AfterTool {} {} {}",
                        ctx.agent_path(),
                        ev.name(),
                        ev.content
                    ),
                );
                Ok(ev)
            }),
        )
        .with(
            on::with(log.clone()).after_step(move |log, ev, ctx| async move {
                push(
                    &log,
                    format!("AfterStep {} {}", ctx.agent_path(), ev.step()),
                );
                Ok(ev)
            }),
        )
        .with(on::with(log.clone()).stop(move |log, ev, ctx| async move {
            push(&log, format!("Stop {} {}", ctx.agent_path(), ev.reason()));
            Ok(ev)
        }))
        .with(
            on::with(log.clone()).run_end(move |log, ev, ctx| async move {
                push(&log, format!("RunEnd {} {}", ctx.agent_path(), ev.stop()));
                Ok(ev)
            }),
        )
}
