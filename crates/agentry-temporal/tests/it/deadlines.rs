//! Deadlines that hooks set on a run (`RunContext::stop_at`: the guards' wall time, or any hook's)
//! on a real Temporal dev server (started by the test, see `support`): a durable timer in the
//! run's workflow stops the run when one passes, in the middle of a tool call, as in-process:
//! the call gets an error result, Stop and RunEnd hooks see the deadline's reason.

use crate::support::DevServer;
use crate::support::agents::{Log, results_in};
use agentry::RunOutput;
use agentry::builtins::Guards;
use agentry::prelude::*;
use agentry::{Message, RunOptions, ScriptedTurn, Tool};
use agentry_temporal::Worker;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// How many `wait` calls started, and how many ran to their end.
#[derive(Clone, Default)]
struct Waits {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

/// `wait`, a tool that takes a minute, counting its calls in `waits`.
fn wait_tool(waits: &Waits) -> impl Tool + use<> {
    let w = waits.clone();
    tool(
        "wait",
        "Takes a minute.",
        move |_: Nothing, _ctx: ToolCtx| {
            let w = w.clone();
            async move {
                w.started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                w.finished.fetch_add(1, Ordering::SeqCst);
                Ok("waited")
            }
        },
    )
}

/// An agent whose model calls `wait` once, then answers.
fn waiter(waits: &Waits) -> Agent {
    Agent::builder("waiter")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("w1", "wait", json!({})),
            _ => ScriptedTurn::text("done waiting"),
        }))
        .tool(wait_tool(waits))
        .build()
        .unwrap()
}

/// A runtime with `hook` whose Stop and RunEnd hooks log the stop reason they see.
fn logging(log: &Log, hook: impl agentry::hooks::IntoHook) -> Runtime {
    let (a, b) = (log.clone(), log.clone());
    Runtime::new()
        .with(hook)
        .with(on::stop(move |ev, _ctx| {
            a.lock().unwrap().push(format!("Stop {}", ev.reason()));
            std::future::ready(Ok(ev))
        }))
        .with(on::run_end(move |ev, _ctx| {
            b.lock().unwrap().push(format!("RunEnd {}", ev.stop()));
            std::future::ready(Ok(ev))
        }))
}

/// Where a deadline is noticed on Temporal.
#[derive(PartialEq)]
enum Noticed {
    /// By the workflow's durable timer: an activity that ended before set it.
    ByTimer,
    /// By the activity under way, which set it and settles when it passes.
    ByActivity,
}

/// Runs `waiter` in-process and on Temporal (queue `queue`) with the runtime `runtime` makes,
/// and checks both stop at the deadline the same way, long before the tool's minute.
async fn stops_alike(queue: &str, noticed: Noticed, runtime: impl Fn(&Log) -> Runtime) {
    let Some(dev) = DevServer::start(queue).await else {
        return;
    };
    let local_log = Arc::default();
    let local_waits = Waits::default();
    let local = runtime(&local_log)
        .run(&waiter(&local_waits), "wait for it")
        .await
        .unwrap();
    assert_eq!(local_waits.started.load(Ordering::SeqCst), 1);

    let log = Arc::default();
    let waits = Waits::default();
    let worker = Worker::new(dev.server(queue), runtime(&log))
        .agent(&waiter(&waits))
        .spawn()
        .unwrap();
    let client = dev.client(queue).await;
    let started = Instant::now();
    let remote: RunOutput<(), String> = client
        .run("waiter", "wait for it")
        .with(RunOptions::new().run_id(queue))
        .await
        .unwrap();
    let took = started.elapsed();

    assert_eq!(remote.stop, local.stop);
    assert_eq!(remote.output, None);
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    let last = remote.messages.iter().last().unwrap();
    assert!(
        matches!(last, Message::Tool(r) if r.content.text().contains("the run stopped before this call's result was recorded")),
        "{last:?}"
    );
    assert_eq!(*log.lock().unwrap(), *local_log.lock().unwrap());
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // The call was under way and was interrupted: it never ran to its end.
    assert_eq!(waits.started.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(waits.finished.load(Ordering::SeqCst), 0);
    let history = dev.history_event_types(queue);
    let fired = history.contains(&"EVENT_TYPE_TIMER_FIRED".to_string());
    assert_eq!(fired, noticed == Noticed::ByTimer, "{history:?}");
    worker.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guards_wall_time_interrupts_a_tool_call_as_in_process() {
    stops_alike("wall-time", Noticed::ByTimer, |log| {
        logging(
            log,
            Guards::none().max_wall_time(Duration::from_millis(1500)),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_a_tool_hook_sets_interrupts_that_tool_call() {
    stops_alike("tool-deadline", Noticed::ByActivity, |log| {
        logging(
            log,
            on::before_tool(|ev, ctx| {
                let stop = StopReason::Hook {
                    hook: "budget".into(),
                    reason: "out of time".into(),
                };
                ctx.stop_at(Instant::now() + Duration::from_millis(800), stop);
                std::future::ready(Ok(ev))
            }),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_before_its_deadline_is_not_stopped_by_it() {
    let Some(dev) = DevServer::start("in-time").await else {
        return;
    };
    let agent = Agent::builder("quick")
        .model(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("quick")))
        .build()
        .unwrap();
    let runtime = Runtime::new().with(Guards::none().max_wall_time(Duration::from_secs(600)));
    let worker = Worker::new(dev.server("in-time"), runtime)
        .agent(&agent)
        .spawn()
        .unwrap();
    let out: RunOutput<(), String> = dev
        .client("in-time")
        .await
        .run("quick", "go")
        .with(RunOptions::new().run_id("in-time"))
        .await
        .unwrap();
    worker.stop().unwrap();
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.output.as_deref(), Some("quick"));
    // Its timer was started and never fired.
    let history = dev.history_event_types("in-time");
    assert!(history.contains(&"EVENT_TYPE_TIMER_STARTED".to_string()));
    assert!(!history.contains(&"EVENT_TYPE_TIMER_FIRED".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_does_not_run_while_the_run_waits_for_a_person() {
    let Some(dev) = DevServer::start("paused").await else {
        return;
    };
    let sign = tool(
        "sign",
        "Needs a person.",
        |_: Nothing, _ctx: ToolCtx| async move { Ok("signed") },
    )
    .needs_approval();
    let agent = Agent::builder("signer")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("s1", "sign", json!({})),
            _ => ScriptedTurn::text("signed it"),
        }))
        .tool(sign)
        .build()
        .unwrap();
    // The call's BeforeTool hook sets a deadline a second away; the person takes longer.
    let runtime = Runtime::new().with(on::before_tool(|ev, ctx| {
        let stop = StopReason::Hook {
            hook: "budget".into(),
            reason: "out of time".into(),
        };
        ctx.stop_at(Instant::now() + Duration::from_secs(1), stop);
        std::future::ready(Ok(ev))
    }));
    let worker = Worker::new(dev.server("paused"), runtime)
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("paused").await;
    let handle = client
        .run("signer", "sign it")
        .with(RunOptions::new().run_id("paused"))
        .start()
        .await
        .unwrap();
    let started = Instant::now();
    while handle.pending().await.unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "never paused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    handle.decide([Decision::approve("s1")]).await.unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(out.output.as_deref(), Some("signed it"));
}

/// `boss`, whose sub-agent `helper` calls `wait`, a tool that takes a minute.
fn boss(waits: &Waits) -> Agent {
    let helper = Agent::builder("helper")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("w1", "wait", json!({})),
            _ => ScriptedTurn::text("helped"),
        }))
        .tool(wait_tool(waits))
        .build()
        .unwrap();
    Agent::builder("boss")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("h1", "helper", json!({"input": "help"})),
            _ => ScriptedTurn::text("bossed"),
        }))
        .sub_agent(&helper)
        .build()
        .unwrap()
}

/// A runtime whose BeforeTool hook gives the boss's call of its helper 1.5 s.
fn boss_budget() -> Runtime {
    Runtime::new().with(on::before_tool(|ev, ctx| {
        if ev.name() == "helper" {
            let stop = StopReason::Hook {
                hook: "budget".into(),
                reason: "the helper took too long".into(),
            };
            ctx.stop_at(Instant::now() + Duration::from_millis(1500), stop);
        }
        std::future::ready(Ok(ev))
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_deadline_interrupts_its_sub_agent_as_in_process() {
    let Some(dev) = DevServer::start("parent-deadline").await else {
        return;
    };
    let local_waits = Waits::default();
    let local = boss_budget().run(&boss(&local_waits), "go").await.unwrap();

    let waits = Waits::default();
    let worker = Worker::new(dev.server("parent-deadline"), boss_budget())
        .agent(&boss(&waits))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let remote: RunOutput<(), String> = dev
        .client("parent-deadline")
        .await
        .run("boss", "go")
        .with(RunOptions::new().run_id("boss"))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(remote.stop, local.stop);
    assert!(matches!(&remote.stop, StopReason::Hook { hook, .. } if hook == "budget"));
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    // The child workflow was stopped mid call, as in-process it is dropped: it never completed,
    // and its tool never ran to its end.
    assert_eq!(waits.started.load(Ordering::SeqCst), 1);
    let child = dev.history_event_types("boss/h1");
    assert!(
        !child.contains(&"EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED".to_string()),
        "{child:?}"
    );
    assert!(
        child
            .iter()
            .any(|t| t == "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED"
                || t == "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED"),
        "{child:?}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(waits.finished.load(Ordering::SeqCst), 0);
    worker.stop().unwrap();
}
