//! Sub-agents on a real Temporal dev server (started by the test, see `support`): each runs as
//! a child workflow of its own (`<run id>/<call id>`) with its parent's hooks around its own, and
//! ends as it does in-process: a failure or a call that would wait for a person is an error
//! result for the parent's model, a hook's failure and the nesting limit fail the parent, and
//! cancelling the parent cancels the child mid call.

use crate::support::DevServer;
use crate::support::agents::results_in;
use agentry::hooks::StoredHook;
use agentry::prelude::*;
use agentry::{
    History, Message, ModelErrorKind, RunOptions, ScriptedTurn,
    hooks::{BoxError, HookRegistration, IntoHook},
};
use agentry_temporal::{TemporalError, Worker};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// The contents of the tool results in `messages`.
fn results(messages: &History) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        })
        .collect()
}

/// `helper`, which answers `helped with <its input>`.
fn helper() -> Agent {
    Agent::builder("helper")
        .model(ScriptedModel::from_fn(|_, req| {
            ScriptedTurn::text(format!(
                "helped with {}",
                req.messages.last().unwrap().text()
            ))
        }))
        .build()
        .unwrap()
}

/// A parent that calls `flaky` (whose model fails), `asker` (whose tool needs approval) and
/// `helper` in turn, then answers.
fn boss() -> Agent {
    let flaky = Agent::builder("flaky")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::error(ModelErrorKind::InvalidRequest, "flaky's model is down")
        }))
        .build()
        .unwrap();
    let approve_me = tool(
        "approve_me",
        "Needs a person.",
        |_: Nothing, _ctx: ToolCtx| async move { Ok("approved") },
    )
    .needs_approval();
    let asker = Agent::builder("asker")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::tool_call("approve_me", json!({}))
        }))
        .tool(approve_me)
        .build()
        .unwrap();
    let helper = helper();
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        0 => ScriptedTurn::new()
            .with_tool_call_id("f1", "flaky", json!({"input": "try"}))
            .with_tool_call_id("a1", "asker", json!({"input": "ask"}))
            .with_tool_call_id("h1", "helper", json!({"input": "help"})),
        _ => ScriptedTurn::text("done"),
    });
    Agent::builder("boss")
        .model(model)
        .sub_agent(&flaky)
        .sub_agent(&asker)
        .sub_agent(&helper)
        .parallel_tool_calls(false)
        .build()
        .unwrap()
}

/// A runtime whose AfterSubAgent and SubAgentFailed hooks log what they saw.
fn logging(log: &Arc<std::sync::Mutex<Vec<String>>>) -> Runtime {
    let (a, b) = (log.clone(), log.clone());
    Runtime::new()
        .with(on::after_sub_agent(move |ev, ctx| {
            let line = format!(
                "AfterSubAgent {} {} {}",
                ctx.agent_path(),
                ev.agent(),
                ev.output
            );
            a.lock().unwrap().push(line);
            std::future::ready(Ok(ev))
        }))
        .with(on::sub_agent_failed(move |ev, ctx| {
            let line = format!("SubAgentFailed {} {}", ctx.agent_path(), ev.agent());
            b.lock().unwrap().push(line);
            std::future::ready(Ok(ev))
        }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_run_as_child_workflows_and_end_as_in_process() {
    let Some(dev) = DevServer::start("children").await else {
        return;
    };
    let local_log = Arc::default();
    let local = logging(&local_log).run(&boss(), "go").await.unwrap();
    let local_results = results(&local.messages);
    assert!(local_results[0].starts_with("sub-agent `flaky` failed: "));
    assert!(local_results[1].contains("cannot wait for a person"));
    assert_eq!(local_results[2], "helped with help");

    let log = Arc::default();
    let worker = Worker::new(dev.server("children"), logging(&log))
        .agent(&boss())
        .spawn()
        .unwrap();
    let client = dev.client("children").await;
    let remote: RunOutput<(), String> = client
        .run("boss", "go")
        .with(RunOptions::new().run_id("boss-1"))
        .await
        .unwrap();
    worker.stop().unwrap();

    assert_eq!(remote.output.as_deref(), Some("done"));
    assert_eq!(results(&remote.messages), local_results);
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    assert_eq!(*log.lock().unwrap(), *local_log.lock().unwrap());
    // Each sub-agent was a child workflow, started and awaited by the parent's workflow.
    let parent = dev.history_event_types("boss-1");
    let started = parent
        .iter()
        .filter(|t| *t == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED")
        .count();
    assert_eq!(started, 3, "{parent:?}");
    for call in ["f1", "a1", "h1"] {
        let child = dev.history_event_types(&format!("boss-1/{call}"));
        assert_eq!(
            child.first().map(String::as_str),
            Some("EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"),
            "{call}"
        );
        assert!(
            child.contains(&"EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED".to_string()),
            "{call}: {child:?}"
        );
    }
}

/// `top` → `middle` → `bottom`, each a sub-agent of the one above; `bottom` answers.
fn tower() -> Agent {
    let bottom = Agent::builder("bottom")
        .model(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("ground")))
        .build()
        .unwrap();
    let delegate = |name: &str, to: &Agent| {
        let next = to.name().to_string();
        Agent::builder(name)
            .model(ScriptedModel::from_fn(move |_, req| {
                match results_in(req) {
                    0 => ScriptedTurn::new().with_tool_call_id(
                        "d1",
                        next.as_str(),
                        json!({"input": "down"}),
                    ),
                    _ => ScriptedTurn::text(req.messages.last().unwrap().text().to_string()),
                }
            }))
            .sub_agent(to)
            .build()
            .unwrap()
    };
    let middle = delegate("middle", &bottom);
    delegate("top", &middle)
}

/// How a run of `top` fails on a worker (on queue `queue`) with `runtime`.
async fn tower_fails(dev: &DevServer, queue: &str, runtime: Runtime) -> TemporalError {
    let worker = Worker::new(dev.server(queue), runtime)
        .agent(&tower())
        .spawn()
        .unwrap();
    let failed = dev.client(queue).await.run("top", "go").await.unwrap_err();
    worker.stop().unwrap();
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nesting_past_the_limit_and_a_sub_agent_hook_failure_fail_the_parent() {
    let Some(dev) = DevServer::start("tower").await else {
        return;
    };
    // Two levels deep is within the default limit: the answer comes up from the bottom.
    let worker = Worker::new(dev.server("tower"), Runtime::new())
        .agent(&tower())
        .spawn()
        .unwrap();
    let out: RunOutput<(), String> = dev
        .client("tower")
        .await
        .run("top", "go")
        .with(RunOptions::new().run_id("tower-1"))
        .await
        .unwrap();
    worker.stop().unwrap();
    assert_eq!(out.output.as_deref(), Some("ground"));
    assert!(!dev.history_event_types("tower-1/d1/d1").is_empty());

    // With a limit of one level, `bottom` may not start: the whole run fails, as in-process.
    let local = Runtime::new().max_depth(1).run(&tower(), "go").await;
    assert!(matches!(local, Err(Error::DepthLimit { .. })), "{local:?}");
    let failed = tower_fails(&dev, "tower-limit", Runtime::new().max_depth(1)).await;
    assert!(
        matches!(&failed, TemporalError::RunFailed { error, .. }
            if error.contains("`top/middle` cannot start a run nested 2 levels deep")),
        "{failed}"
    );

    // A hook that fails inside a sub-agent's run fails the parent too.
    let refusing = || {
        Runtime::new().with(on::run_start(|ev, ctx| {
            let nested = ctx.agent_path().contains('/');
            std::future::ready(match nested {
                true => Err("no nested runs today".into()),
                false => Ok(ev),
            })
        }))
    };
    let local = refusing().run(&tower(), "go").await;
    assert!(matches!(local, Err(Error::Hook(_))), "{local:?}");
    let failed = tower_fails(&dev, "tower-hook", refusing()).await;
    assert!(
        matches!(&failed, TemporalError::RunFailed { error, .. } if error.contains("no nested runs today")),
        "{failed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_cancels_its_sub_agent_mid_call() {
    let Some(dev) = DevServer::start("child-cancel").await else {
        return;
    };
    let started = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, d) = (started.clone(), dropped.clone());
    let wait = tool("wait", "Waits.", move |_: Nothing, _ctx: ToolCtx| {
        let (s, guard) = (s.clone(), Dropped(d.clone()));
        async move {
            let _guard = guard;
            s.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
            Ok("never seen")
        }
    });
    let waiter = Agent::builder("waiter")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::tool_call("wait", json!({}))
        }))
        .tool(wait)
        .build()
        .unwrap();
    let parent = Agent::builder("parent")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::new().with_tool_call_id("w1", "waiter", json!({"input": "wait"}))
        }))
        .sub_agent(&waiter)
        .build()
        .unwrap();
    let worker = Worker::new(dev.server("child-cancel"), Runtime::new())
        .agent(&parent)
        .spawn()
        .unwrap();
    let handle = dev
        .client("child-cancel")
        .await
        .run("parent", "go")
        .with(RunOptions::new().run_id("parent-1"))
        .start()
        .await
        .unwrap();
    let start = Instant::now();
    while started.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child's call never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    handle.cancel().await.unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    while dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child's call was never interrupted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.stop().unwrap();
    let child = dev.history_event_types("parent-1/w1");
    assert!(
        child.contains(&"EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED".to_string()),
        "{child:?}"
    );
}

/// Counts its drops: a tool call's future dropped mid-call.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// How many times a worker built [`Suffix`] from its record.
static SUFFIX_BUILDS: AtomicUsize = AtomicUsize::new(0);

/// A run-scope hook that is data: RunStart appends its suffix to the input.
struct Suffix(String);

impl IntoHook for Suffix {
    fn into_hook(self) -> HookRegistration {
        let suffix = self.0;
        on::run_start(move |mut ev, _ctx| {
            ev.input.push_str(&suffix);
            std::future::ready(Ok(ev))
        })
        .into_hook()
    }
}

impl StoredHook for Suffix {
    const KIND: &'static str = "test/suffix";

    fn spec(&self) -> serde_json::Value {
        json!({ "suffix": self.0 })
    }

    fn from_spec(spec: &serde_json::Value) -> Result<Self, BoxError> {
        SUFFIX_BUILDS.fetch_add(1, Ordering::SeqCst);
        let suffix = spec["suffix"]
            .as_str()
            .ok_or("a suffix spec has `suffix`")?;
        Ok(Suffix(suffix.to_string()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_run_scope_hooks_travel_to_the_workers_and_to_sub_agents() {
    let Some(dev) = DevServer::start("stored").await else {
        return;
    };
    let helper = helper();
    let agent = Agent::builder("asks")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("h1", "helper", json!({"input": "help"})),
            _ => ScriptedTurn::text(req.messages.last().unwrap().text().to_string()),
        }))
        .sub_agent(&helper)
        .build()
        .unwrap();
    let options = || RunOptions::new().with_stored(Suffix("!".into()));
    let local = Runtime::new()
        .run(&agent, "go")
        .with(options())
        .await
        .unwrap();
    assert_eq!(local.output.as_deref(), Some("helped with help!"));
    assert_eq!(local.messages.get(0).unwrap().text(), "go!");

    let worker = Worker::new(dev.server("stored"), Runtime::new().restores::<Suffix>())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("stored").await;
    let remote: RunOutput<(), String> = client
        .run("asks", "go")
        .with(options().run_id("stored-1"))
        .await
        .unwrap();
    worker.stop().unwrap();
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    // Built once for the run and once for its sub-agent's, not once per activity.
    assert_eq!(SUFFIX_BUILDS.load(Ordering::SeqCst), 2);

    // A closure cannot travel: the client says so before anything starts.
    let refused = client
        .run("asks", "go")
        .with(RunOptions::new().with(on::run_start(|ev, _ctx| std::future::ready(Ok(ev)))))
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, TemporalError::Options(why) if why.contains("only when they are data")),
        "{refused}"
    );
}

/// `lead`, whose sub-agent `slowpoke` calls `hold` (which waits for `gate`) and then answers.
fn lead(gate: &Arc<tokio::sync::Semaphore>) -> Agent {
    let g = gate.clone();
    let hold = tool(
        "hold",
        "Waits its turn.",
        move |_: Nothing, _ctx: ToolCtx| {
            let gate = g.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                Ok("held")
            }
        },
    );
    let slowpoke = Agent::builder("slowpoke")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("h1", "hold", json!({})),
            _ => ScriptedTurn::text("finally"),
        }))
        .tool(hold)
        .build()
        .unwrap();
    Agent::builder("lead")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("s1", "slowpoke", json!({"input": "go"})),
            _ => ScriptedTurn::text("led"),
        }))
        .sub_agent(&slowpoke)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_events_reach_its_parents_stream_as_they_happen_and_once() {
    let Some(dev) = DevServer::start("live").await else {
        return;
    };
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let worker = Worker::new(dev.server("live"), Runtime::new())
        .agent(&lead(&gate))
        .spawn()
        .unwrap();
    let client = dev.client("live").await;
    let handle = client
        .run("lead", "lead on")
        .with(RunOptions::new().run_id("lead-1"))
        .start()
        .await
        .unwrap();
    let mut events = std::pin::pin!(handle.events());
    let mut seen = Vec::new();
    // The sub-agent's turn that calls `hold` reaches the parent's stream while the call still
    // waits, long before the sub-agent ends. (Its `ToolStarted` comes with the call's end: events
    // arrive a phase, an activity, at a time.)
    let waiting = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let holding = matches!(&event, RunEvent::Message { message, agent_path, .. }
                if &**agent_path == "lead/slowpoke"
                    && message.tool_calls().iter().any(|c| c.name == "hold"));
            seen.push(event);
            if holding {
                return;
            }
        }
        panic!("the stream ended without the sub-agent's call");
    })
    .await;
    assert!(
        waiting.is_ok(),
        "the sub-agent's call never reached the stream: {seen:#?}"
    );
    gate.add_permits(1);
    while let Some(event) = events.next().await {
        seen.push(event.unwrap());
    }
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();
    assert_eq!(out.output.as_deref(), Some("led"));

    // Every event of the sub-agent's run is in the parent's stream once, in its order.
    let child: Vec<&'static str> = seen
        .iter()
        .filter(|e| e.agent_path() == "lead/slowpoke")
        .map(|e| e.kind())
        .collect();
    assert_eq!(
        child.iter().filter(|k| **k == "run_started").count(),
        1,
        "{child:?}"
    );
    assert_eq!(
        child.iter().filter(|k| **k == "tool_started").count(),
        1,
        "{child:?}"
    );
    assert_eq!(child.first(), Some(&"run_started"));
    assert_eq!(child.last(), Some(&"run_finished"));
    // And the parent's own events frame them.
    let lead_end = seen
        .iter()
        .position(|e| matches!(e, RunEvent::RunFinished { run_id, .. } if run_id == "lead-1"))
        .unwrap();
    assert_eq!(lead_end, seen.len() - 1);
}
