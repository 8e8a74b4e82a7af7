//! Nothing waits forever and nothing nests without end: hooks, model turns (whole turn and idle
//! stream) and tool calls have default time limits, configurable, each failing with an error that
//! names the limit; the wall-time guard and cancellation interrupt calls in flight; runs nest to a
//! depth limit, each on a task of its own so the stack does not grow with the depth.

use crate::common::*;
use agentry::builtins::Guards;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{
    Limit, MemoryStore, ModelErrorKind, ModelEvent, ModelRequest, ModelStream, RunStore, TypedTool,
};
use agentry::{Model, RunOptions, ToolFailure};
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const SHORT: Duration = Duration::from_millis(150);

/// Awaits `work`, failing the test instead of hanging.
async fn bounded<F: Future>(work: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), work)
        .await
        .expect("it hung: no limit fired")
}

/// A model whose stream never sends anything.
struct Silent;

impl Model for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> ModelStream<'a> {
        futures::stream::pending().boxed()
    }
}

/// A model that streams a piece of text every 20 ms and never ends its turn.
struct Endless;

impl Model for Endless {
    fn name(&self) -> &str {
        "endless"
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> ModelStream<'a> {
        futures::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Some((Ok(ModelEvent::TextDelta("la ".into())), ()))
        })
        .boxed()
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

type Never = futures::future::Pending<Result<String, ToolFailure>>;

/// A tool that never returns.
fn stuck_tool(name: &'static str) -> TypedTool<Nothing, fn(Nothing, ToolCtx) -> Never> {
    fn never(_: Nothing, _: ToolCtx) -> Never {
        futures::future::pending()
    }
    tool(
        name,
        "Never returns.",
        never as fn(Nothing, ToolCtx) -> Never,
    )
}

/// An agent that calls `stuck` once, then answers "done".
fn calls_stuck(model: &ScriptedModel) -> agentry::AgentBuilder<(), String> {
    Agent::builder("waiter").model(model.clone())
}

fn stuck_then_done() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("stuck", json!({}))
        .text("done")
}

/// The content of the tool result the model received in its request `n`.
fn result_sent(model: &ScriptedModel, n: usize) -> String {
    model.requests()[n]
        .messages
        .last()
        .and_then(|m| m.tool_result().cloned())
        .expect("the last message is a tool result")
        .content
        .text()
        .into_owned()
}

/// A BeforeTool hook named `stuck-hook` that never returns.
fn stuck_hook() -> HookRegistration {
    on::before_tool(|ev, _ctx| async move {
        futures::future::pending::<()>().await;
        Ok(ev)
    })
    .named("stuck-hook")
}

#[tokio::test]
async fn a_hook_that_never_returns_fails_the_run_at_the_default_hook_timeout_which_it_names() {
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("Enjoy.");
    let agent = Agent::builder("planner")
        .model(model)
        .tool(weather(&new_log(), &Counter::default()))
        .with(stuck_hook())
        .build()
        .unwrap();
    let runtime = Runtime::new().hook_timeout(SHORT);

    let err = bounded(runtime.run(&agent, "Paris?").into_future())
        .await
        .unwrap_err();

    let Error::Hook(e) = &err else {
        panic!("a hook error, not {err:?}")
    };
    assert_eq!(e.hook, "stuck-hook");
    assert_eq!(e.event, EventKind::BeforeTool);
    assert_eq!(e.failure, HookFailure::DefaultTimeout(SHORT));
    let text = err.to_string();
    assert!(text.contains("default hook timeout"), "{text}");
    assert!(text.contains("Runtime::hook_timeout"), "{text}");
}

#[tokio::test]
async fn a_hooks_own_timeout_stands_over_the_default_and_is_the_one_named() {
    let own = Duration::from_millis(80);
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text("Enjoy.");
    let agent = Agent::builder("planner")
        .model(model)
        .tool(weather(&new_log(), &Counter::default()))
        .with(stuck_hook().timeout(own))
        .build()
        .unwrap();
    // A default far away: the hook's own limit is what fires.
    let runtime = Runtime::new().hook_timeout(Duration::from_secs(600));

    let err = bounded(runtime.run(&agent, "Paris?").into_future())
        .await
        .unwrap_err();

    let Error::Hook(e) = &err else {
        panic!("a hook error, not {err:?}")
    };
    assert_eq!(e.failure, HookFailure::Timeout(own));
    assert!(err.to_string().contains("its own timeout"), "{err}");
}

#[tokio::test]
async fn an_advisory_hook_that_never_returns_is_reported_and_the_run_goes_on() {
    let failures = new_log();
    let f = failures.clone();
    let agent = Agent::builder("planner")
        .model(
            ScriptedModel::new()
                .tool_call("get_weather", json!({"city": "Paris"}))
                .text("Enjoy."),
        )
        .tool(weather(&new_log(), &Counter::default()))
        .with(stuck_hook().advisory())
        .build()
        .unwrap();
    let runtime = Runtime::new()
        .hook_timeout(SHORT)
        .with(on::hook_failed(move |ev, _ctx| {
            push(
                &f,
                format!("{} on {}: {}", ev.hook(), ev.event(), ev.error()),
            );
            std::future::ready(Ok(ev))
        }));

    let out = bounded(runtime.run(&agent, "Paris?").into_future())
        .await
        .unwrap();

    assert_eq!(out.output.as_deref(), Some("Enjoy."));
    let failures = entries(&failures);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("stuck-hook on BeforeTool"),
        "{failures:?}"
    );
    assert!(failures[0].contains("default hook timeout"), "{failures:?}");
}

#[tokio::test]
async fn a_tool_that_never_returns_gives_the_model_an_error_naming_the_default_tool_timeout() {
    let model = stuck_then_done();
    let errors = new_log();
    let e = errors.clone();
    let agent = calls_stuck(&model)
        .tool(stuck_tool("stuck"))
        .with(on::tool_failed(move |ev, _ctx| {
            push(&e, ev.error());
            std::future::ready(Ok(ev))
        }))
        .build()
        .unwrap();
    let runtime = Runtime::new().tool_timeout(SHORT);

    let out = bounded(runtime.run(&agent, "Go.").into_future())
        .await
        .unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    let sent = result_sent(&model, 1);
    assert!(
        sent.contains("tool `stuck` did not finish within 150ms"),
        "{sent}"
    );
    assert!(sent.contains("Runtime::tool_timeout"), "{sent}");
    assert_eq!(
        entries(&errors),
        [sent],
        "ToolFailed hooks see the same failure"
    );
}

#[tokio::test]
async fn a_tools_own_time_limit_stands_over_the_default_and_is_the_one_named() {
    let model = stuck_then_done();
    let agent = calls_stuck(&model)
        .tool(stuck_tool("stuck").timeout(Duration::from_millis(80)))
        .build()
        .unwrap();
    let runtime = Runtime::new().tool_timeout(Duration::from_secs(600));

    let out = bounded(runtime.run(&agent, "Go.").into_future())
        .await
        .unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    let sent = result_sent(&model, 1);
    assert!(sent.contains("within 80ms, its own time limit"), "{sent}");
}

#[tokio::test]
async fn a_model_stream_that_goes_quiet_fails_at_the_idle_timeout_which_it_names() {
    let agent = Agent::builder("quiet").model(Silent).build().unwrap();
    let runtime = Runtime::new()
        .model_idle_timeout(SHORT)
        .model_turn_timeout(Duration::from_secs(600));

    let err = bounded(runtime.run(&agent, "Hello?").into_future())
        .await
        .unwrap_err();

    let Error::Model(e) = &err else {
        panic!("a model error, not {err:?}")
    };
    assert_eq!(e.kind, ModelErrorKind::Timeout);
    assert_eq!(e.model, "silent");
    assert!(e.message.contains("no event for 150ms"), "{e}");
    assert!(
        e.message.contains("Runtime::model_idle_timeout")
            && e.message.contains("`[limits]` in agentry.toml"),
        "{e}"
    );
}

#[tokio::test]
async fn a_model_that_streams_without_end_fails_at_the_turn_timeout_which_it_names() {
    let agent = Agent::builder("chatty").model(Endless).build().unwrap();
    let runtime = Runtime::new()
        .model_idle_timeout(SHORT)
        .model_turn_timeout(Duration::from_millis(400));
    let started = Instant::now();

    let err = bounded(runtime.run(&agent, "Hello?").into_future())
        .await
        .unwrap_err();

    let Error::Model(e) = &err else {
        panic!("a model error, not {err:?}")
    };
    assert_eq!(e.kind, ModelErrorKind::Timeout);
    assert!(e.message.contains("within 400ms"), "{e}");
    assert!(e.message.contains("Runtime::model_turn_timeout"), "{e}");
    // Pieces kept coming more often than the idle timeout: it never fired.
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn the_wall_time_guard_interrupts_a_tool_call_in_flight_and_the_history_stays_whole() {
    let model = stuck_then_done();
    let agent = calls_stuck(&model)
        .tool(stuck_tool("stuck"))
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let stops = new_log();
    let s = stops.clone();
    let runtime = Runtime::new()
        .store(store.clone())
        .with(Guards::none().max_wall_time(SHORT))
        .with(on::stop(move |ev, _ctx| {
            push(&s, ev.reason().to_string());
            std::future::ready(Ok(ev))
        }));

    let out = bounded(
        runtime
            .run(&agent, "Go.")
            .with(RunOptions::new().run_id("w1"))
            .into_future(),
    )
    .await
    .unwrap();

    let StopReason::Limit {
        limit: Limit::WallTime { limit_ms, .. },
        ..
    } = &out.stop
    else {
        panic!("stopped by the wall time, not {:?}", out.stop)
    };
    assert_eq!(*limit_ms, 150);
    assert_eq!(model.calls(), 1, "no model call after the limit");
    // The call in flight got a result, so the history can be sent to a model again.
    let last = out.messages.last().and_then(|m| m.tool_result().cloned());
    let last = last.expect("the interrupted call has a result");
    assert!(last.is_error);
    assert!(
        last.content.text().contains("the run stopped"),
        "{}",
        last.content
    );
    assert_eq!(entries(&stops), [out.stop.to_string()]);
    // The store holds the run as it ended.
    let stored = store.load("w1").await.unwrap().unwrap().snapshot;
    assert_eq!(stored.stop.as_ref(), Some(&out.stop));
    assert_eq!(stored.messages.len(), out.messages.len());
}

#[tokio::test]
async fn the_wall_time_guard_interrupts_a_model_turn_in_flight() {
    let agent = Agent::builder("quiet").model(Silent).build().unwrap();
    let runtime = Runtime::new().with(Guards::none().max_wall_time(SHORT));

    let out = bounded(runtime.run(&agent, "Hello?").into_future())
        .await
        .unwrap();

    assert!(
        matches!(
            out.stop,
            StopReason::Limit {
                limit: Limit::WallTime { .. },
                ..
            }
        ),
        "{:?}",
        out.stop
    );
}

#[tokio::test]
async fn cancellation_interrupts_a_model_turn_and_a_tool_call_in_flight() {
    // A model turn that never ends.
    let agent = Agent::builder("quiet").model(Silent).build().unwrap();
    let handle = Runtime::new().run(&agent, "Hello?").start();
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.cancel();
    let out = bounded(handle.result()).await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);

    // A tool call that never ends.
    let model = stuck_then_done();
    let agent = calls_stuck(&model)
        .tool(stuck_tool("stuck"))
        .build()
        .unwrap();
    let handle = Runtime::new().run(&agent, "Go.").start();
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.cancel();
    let out = bounded(handle.result()).await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(model.calls(), 1);
}

/// A chain of `levels` agents, `a<levels-1>` down to `a0`: each delegates to the next once and
/// answers with what it heard; `a0` answers "bottom".
fn chain(levels: usize) -> Agent {
    let mut agent = Agent::builder("a0")
        .description("The bottom.")
        .model(ScriptedModel::new().text("bottom"))
        .build()
        .unwrap();
    for level in 1..levels {
        let below = format!("a{}", level - 1);
        agent = Agent::builder(format!("a{level}"))
            .description("A level.")
            .model(
                ScriptedModel::new()
                    .tool_call(below, json!({"input": "go down"}))
                    .text(format!("level {level}")),
            )
            .sub_agent(&agent)
            .build()
            .unwrap();
    }
    agent
}

#[tokio::test]
async fn sub_agents_nested_past_the_depth_limit_fail_the_run_with_an_error_naming_the_limit() {
    // Twelve levels: a11 is at depth 0, a3 at depth 8 (the default limit) cannot start a2.
    let err = bounded(Runtime::new().run(&chain(12), "Go.").into_future())
        .await
        .unwrap_err();

    let Error::DepthLimit { path, depth, limit } = &err else {
        panic!("a depth limit error, not {err:?}")
    };
    assert_eq!((*depth, *limit), (9, 8));
    assert_eq!(path, "a11/a10/a9/a8/a7/a6/a5/a4/a3");
    assert!(err.to_string().contains("Runtime::max_depth"), "{err}");

    // The same chain within a raised limit runs to the end.
    let out = bounded(
        Runtime::new()
            .max_depth(11)
            .run(&chain(12), "Go.")
            .into_future(),
    )
    .await
    .unwrap();
    assert_eq!(out.output.as_deref(), Some("level 11"));
}

#[test]
fn deep_nesting_does_not_grow_the_stack() {
    // One worker with a small stack: 48 nested runs polled on top of one another overflow it
    // (and abort the process) in a debug build; each on a task of its own, they do not.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_stack_size(1024 * 1024)
        .enable_all()
        .build()
        .unwrap();
    let levels = 48;
    let out = runtime.block_on(async move {
        let agent = chain(levels);
        let rt = Runtime::new().max_depth(64);
        tokio::spawn(async move { rt.run(&agent, "Go.").await })
            .await
            .expect("the run's task ended normally")
    });
    assert_eq!(out.unwrap().output.as_deref(), Some("level 47"));
}

/// An agent whose tool `again` runs a new copy of the agent with `runtime` and answers with
/// what it said, or with the error it got.
fn calls_itself(runtime: Runtime, started: Arc<AtomicU32>, errors: Log) -> Agent {
    started.fetch_add(1, Ordering::SeqCst);
    let again = tool(
        "again",
        "Runs this agent again.",
        move |_: Nothing, _ctx: ToolCtx| {
            let (runtime, started, errors) = (runtime.clone(), started.clone(), errors.clone());
            async move {
                let agent = calls_itself(runtime.clone(), started, errors.clone());
                match runtime.run(&agent, "Again.").await {
                    Ok(out) => Ok(out.output.unwrap_or_default()),
                    Err(e) => {
                        push(&errors, e.to_string());
                        Err(ToolFailure::new(e.to_string()))
                    }
                }
            }
        },
    );
    Agent::builder("recursive")
        .model(
            ScriptedModel::new()
                .tool_call("again", json!({}))
                .text("done"),
        )
        .tool(again)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_tool_that_runs_its_own_agent_again_is_stopped_at_the_depth_limit() {
    let started = Arc::new(AtomicU32::new(0));
    let errors = new_log();
    let runtime = Runtime::new();
    let agent = calls_itself(runtime.clone(), started.clone(), errors.clone());

    let out = bounded(runtime.run(&agent, "Go.").into_future())
        .await
        .unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    // Depths 0 to 8 ran; the agent built for depth 9 was refused before it ran a step.
    assert_eq!(started.load(Ordering::SeqCst), 10);
    let errors = entries(&errors);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("nested 9 levels deep: the limit is 8"),
        "{errors:?}"
    );
}
