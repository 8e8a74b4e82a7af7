//! Runs on a real Temporal dev server (started by the test, see `support`): the same agent and
//! scripted model give the same result, history and hook decisions as in-process; a run is
//! cancelled mid tool call; a call waits for approval, across a worker restart, and runs once
//! decided.

use crate::support::DevServer;
use crate::support::agents::{Log, assistant, recording_runtime};
use agentry::prelude::*;
use agentry::{Decision, RunOutput};
use agentry::{Message, RunOptions, ScriptedTurn};
use agentry_temporal::{Placement, RunState, TemporalError, Worker};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Waits until `done` holds, for at most 60 s.
pub(crate) async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !done().await {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_tools_hooks_and_a_sub_agent_matches_the_in_process_run() {
    let Some(dev) = DevServer::start("parity").await else {
        return;
    };
    // In-process.
    let local_log = Log::default();
    let local_calls = Arc::new(AtomicUsize::new(0));
    let (agent, runtime) = assistant(&local_log, &local_calls);
    let local = runtime.run(&agent, "What is 2 + 3?").await.unwrap();

    // On Temporal: the same agent and hooks, hosted by a worker.
    let log = Log::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let (agent, runtime) = assistant(&log, &calls);
    let worker = Worker::new(dev.server("parity"), runtime)
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("parity").await;
    let handle = client
        .run("assistant", "What is 2 + 3?")
        .with(RunOptions::new().run_id("parity-1"))
        .start()
        .await
        .unwrap();
    let remote: RunOutput<(), String> = handle.result().await.unwrap();

    assert_eq!(remote.stop, StopReason::FinalAnswer);
    assert_eq!(remote.output.as_deref(), Some("the answer is 5"));
    assert_eq!(remote.run_id, "parity-1");
    assert_eq!(remote.output, local.output);
    assert_eq!(remote.text, local.text);
    assert_eq!(remote.stop, local.stop);
    assert_eq!(remote.messages.to_vec(), local.messages.to_vec());
    assert_eq!(remote.usage, local.usage);
    assert_eq!(remote.steps, local.steps);
    assert_eq!(remote.model_calls, local.model_calls);
    // The hooks decided the same: the input rewritten, `secret` blocked, `echo` upper-cased.
    let tool_results: Vec<String> = remote
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_results,
        ["5", "HI", "helped with summarise please", "no secrets"]
    );
    assert_eq!(
        remote.messages.get(0).unwrap().text(),
        "What is 2 + 3? please"
    );
    // Every hook ran once per event, in the same order as in-process (the sub-agent's hooks
    // inside the tool call that runs it).
    let remote_log = log.lock().unwrap().clone();
    let local_log = local_log.lock().unwrap().clone();
    assert_eq!(remote_log, local_log);
    assert!(remote_log.contains(&"RunStart assistant/helper summarise please".to_string()));
    assert_eq!(
        remote_log.last().map(String::as_str),
        Some("RunEnd assistant final answer")
    );
    // No tool ran twice: add, echo (secret was blocked; the helper is a sub-agent).
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(local_calls.load(Ordering::SeqCst), 2);

    // The run is listed, ended.
    let mut listed = None;
    until("the run to be listed", async || {
        listed = client
            .list()
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.run_id == "parity-1");
        listed.is_some()
    })
    .await;
    assert_eq!(listed.unwrap().status, RunState::Ended);
    // An agent the worker does not host fails the run with an error that names it.
    let err = client.run("nobody", "hi").await.unwrap_err();
    assert!(
        matches!(&err, TemporalError::RunFailed { error, .. } if error.contains("no agent `nobody`")),
        "{err}"
    );
    worker.stop().unwrap();
}

/// An event in a form that compares across runtimes: its kind, its agent, and what it says.
fn shape(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::TextDelta {
            text, agent_path, ..
        } => format!("text_delta {agent_path} {text}"),
        RunEvent::ThinkingDelta {
            text, agent_path, ..
        } => {
            format!("thinking_delta {agent_path} {text}")
        }
        RunEvent::RunStarted { agent_path, .. } => format!("run_started {agent_path}"),
        RunEvent::ModelRequest {
            messages,
            messages_rewritten,
            system,
            tools,
            params,
            agent_path,
            ..
        } => format!(
            "model_request {agent_path} {messages} {messages_rewritten} {system:?} {tools:?} {params:?}"
        ),
        RunEvent::StepStarted {
            step, agent_path, ..
        } => format!("step_started {agent_path} {step}"),
        RunEvent::StepFinished {
            step,
            agent_path,
            usage,
            ..
        } => format!(
            "step_finished {agent_path} {step} {}+{}",
            usage.input_tokens, usage.output_tokens
        ),
        RunEvent::ToolStarted {
            call_id,
            name,
            input,
            agent_path,
            ..
        } => format!("tool_started {agent_path} {call_id} {name} {input}"),
        RunEvent::ToolFinished {
            result, agent_path, ..
        } => {
            format!(
                "tool_finished {agent_path} {} {}",
                result.call_id, result.content
            )
        }
        RunEvent::Message {
            message,
            agent_path,
            ..
        } => format!(
            "message {agent_path} {}",
            serde_json::to_string(&**message).unwrap()
        ),
        RunEvent::HookDecision {
            hook,
            event,
            decision,
            call_id,
            agent_path,
            ..
        } => format!("hook_decision {agent_path} {hook} {event} {decision} {call_id}"),
        RunEvent::RunFinished {
            stop, agent_path, ..
        } => format!("run_finished {agent_path} {stop}"),
        RunEvent::RunFailed {
            error, agent_path, ..
        } => format!("run_failed {agent_path} {error}"),
        other => format!("{} {other:?}", other.kind()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_temporal_streams_the_events_of_the_in_process_run() {
    let Some(dev) = DevServer::start("events").await else {
        return;
    };
    let local_log = Log::default();
    let (agent, runtime) = assistant(&local_log, &Arc::new(AtomicUsize::new(0)));
    let mut local = runtime.run(&agent, "What is 2 + 3?").start();
    let mut expected = Vec::new();
    while let Some(event) = local.events().next().await {
        expected.extend(shape(&event));
    }
    local.result().await.unwrap();
    // The run is one of every kind that matters: tools, a hook's decision, a sub-agent.
    for kind in [
        "run_started assistant",
        "tool_started assistant",
        "hook_decision assistant",
        "run_started assistant/helper",
        "message assistant/helper",
        "text_delta assistant",
        "text_delta assistant/helper",
        "step_finished assistant",
        "run_finished assistant",
    ] {
        assert!(
            expected.iter().any(|e| e.starts_with(kind)),
            "no `{kind}` in {expected:#?}"
        );
    }

    for (placement, name) in [
        (Placement::Scheduled, "events"),
        (Placement::Local, "events-local"),
    ] {
        let log = Log::default();
        let (agent, runtime) = assistant(&log, &Arc::new(AtomicUsize::new(0)));
        let worker = Worker::new(dev.server(name), runtime)
            .agent(&agent)
            .spawn()
            .unwrap();
        let client = dev.client(name).await.placement(placement);
        let handle = client
            .run("assistant", "What is 2 + 3?")
            .start()
            .await
            .unwrap();
        let events: Vec<RunEvent> = handle.events().map(|e| e.unwrap()).collect().await;
        let got: Vec<String> = events.iter().filter_map(shape).collect();
        assert_eq!(got, expected, "{name}");
        let out: RunOutput<(), String> = handle.result().await.unwrap();
        assert_eq!(out.output.as_deref(), Some("the answer is 5"));
        worker.stop().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_placement_gives_the_in_process_run_and_records_its_activities_as_it_says() {
    let Some(dev) = DevServer::start("placement").await else {
        return;
    };
    let local_log = Log::default();
    let (agent, runtime) = assistant(&local_log, &Arc::new(AtomicUsize::new(0)));
    let local = runtime.run(&agent, "What is 2 + 3?").await.unwrap();
    let local_log = local_log.lock().unwrap().clone();

    for (placement, name) in [
        (Placement::Scheduled, "scheduled"),
        (Placement::LocalHooks, "local-hooks"),
        (Placement::Local, "local"),
    ] {
        let log = Log::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let (agent, runtime) = assistant(&log, &calls);
        let worker = Worker::new(dev.server(name), runtime)
            .agent(&agent)
            .spawn()
            .unwrap();
        let client = dev.client(name).await.placement(placement);
        let id = format!("placement-{name}");
        let remote: RunOutput<(), String> = client
            .run("assistant", "What is 2 + 3?")
            .with(RunOptions::new().run_id(&id))
            .start()
            .await
            .unwrap()
            .result()
            .await
            .unwrap();
        worker.stop().unwrap();
        assert_eq!(remote.output, local.output, "{name}");
        assert_eq!(remote.messages.to_vec(), local.messages.to_vec(), "{name}");
        assert_eq!(
            *log.lock().unwrap(),
            local_log,
            "{name}: every hook ran once per event, as in-process"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2, "{name}: no tool ran twice");

        let types = dev.history_event_types(&id);
        let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
        let scheduled = count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED");
        let local_runs = count("EVENT_TYPE_MARKER_RECORDED");
        // Model steps and tool calls (four calls, one blocked by a hook inside its activity).
        let effects = remote.model_calls as usize + 4;
        match placement {
            Placement::Scheduled => {
                assert_eq!(local_runs, 0, "{name}: {types:?}");
                assert!(scheduled > effects, "{name}: {types:?}");
            }
            Placement::LocalHooks => {
                assert_eq!(scheduled, effects, "{name}: {types:?}");
                assert!(local_runs > 0, "{name}: {types:?}");
            }
            Placement::Local => {
                assert_eq!(scheduled, 0, "{name}: {types:?}");
                assert!(local_runs > effects, "{name}: {types:?}");
            }
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Counts its drops: a tool call's future dropped mid-call.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_stops_mid_tool_call_and_ends_cancelled() {
    let Some(dev) = DevServer::start("cancel").await else {
        return;
    };
    let log = Log::default();
    let started = Arc::new(AtomicUsize::new(0));
    let interrupted = Arc::new(AtomicUsize::new(0));
    let (s, i) = (started.clone(), interrupted.clone());
    let wait = tool("wait", "Waits.", move |_: Nothing, _ctx: ToolCtx| {
        let (s, dropped) = (s.clone(), Dropped(i.clone()));
        async move {
            let _dropped = dropped;
            s.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
            Ok("never seen")
        }
    });
    let agent = Agent::builder("waiter")
        .model(ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::tool_call("wait", json!({}))
        }))
        .tool(wait)
        .build()
        .unwrap();
    let worker = Worker::new(dev.server("cancel"), recording_runtime(&log))
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("cancel").await;
    let handle = client.run("waiter", "wait").start().await.unwrap();
    until("the tool to start", async || {
        started.load(Ordering::SeqCst) == 1
    })
    .await;
    handle.cancel().await.unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    // The step under way does not count, as in-process.
    assert_eq!(out.steps, 0);
    // The call in flight was interrupted on the worker (its activity was cancelled through its
    // heartbeat, and the call dropped, as in-process).
    until("the call to be interrupted", async || {
        interrupted.load(Ordering::SeqCst) == 1
    })
    .await;
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log[log.len() - 2..],
        ["Stop waiter cancelled", "RunEnd waiter cancelled"]
    );
    worker.stop().unwrap();

    // The same run cancelled at the same point in-process runs the same hooks.
    let local_log = Log::default();
    started.store(0, Ordering::SeqCst);
    let local = recording_runtime(&local_log).run(&agent, "wait").start();
    until("the local tool to start", async || {
        started.load(Ordering::SeqCst) == 1
    })
    .await;
    local.cancel();
    let local = local.result().await.unwrap();
    assert_eq!(local.stop, out.stop);
    assert_eq!(local.steps, out.steps);
    assert_eq!(*local_log.lock().unwrap(), log);
}

#[derive(Deserialize, JsonSchema)]
struct Days {
    days: u32,
}

pub(crate) fn cleaner(deletes: &Arc<AtomicUsize>) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        match req.messages.iter().rev().find_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        }) {
            None => ScriptedTurn::new().with_tool_call_id("d1", "delete_logs", json!({"days": 30})),
            Some(result) => ScriptedTurn::text(format!("done: {result}")),
        }
    });
    let n = deletes.clone();
    let delete = tool(
        "delete_logs",
        "Deletes old logs.",
        move |a: Days, _ctx: ToolCtx| {
            n.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("deleted logs older than {} days", a.days)) }
        },
    )
    .needs_approval();
    Agent::builder("cleaner")
        .model(model)
        .tool(delete)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_waits_across_a_worker_restart_and_the_call_runs_once_decided() {
    let Some(dev) = DevServer::start("approval").await else {
        return;
    };
    let deletes = Arc::new(AtomicUsize::new(0));
    let agent = cleaner(&deletes);
    let worker = Worker::new(dev.server("approval"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("approval").await;
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    let mut pending = Vec::new();
    until("the call to wait for approval", async || {
        pending = handle.pending().await.unwrap();
        !pending.is_empty()
    })
    .await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "d1");
    assert_eq!(pending[0].tool, "delete_logs");
    assert_eq!(pending[0].input, json!({"days": 30}));
    assert_eq!(deletes.load(Ordering::SeqCst), 0);

    // The waiting run holds no worker: with none running, it waits on the server.
    worker.stop().unwrap();
    // Decisions that do not fit are refused, changing nothing (the update's validator runs on a
    // worker, so start the next one first).
    let worker = Worker::new(dev.server("approval"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let refused = handle
        .decide([Decision::Approve {
            call_id: "nope".into(),
        }])
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, TemporalError::Decisions { message, .. } if message.contains("no pending call `nope`")),
        "{refused}"
    );
    assert_eq!(handle.pending().await.unwrap(), pending);

    handle
        .decide([Decision::Approve {
            call_id: "d1".into(),
        }])
        .await
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::FinalAnswer);
    assert_eq!(
        out.output.as_deref(),
        Some("done: deleted logs older than 30 days")
    );
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    assert!(handle.pending().await.unwrap().is_empty());
    worker.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_call_gives_the_model_the_reason() {
    let Some(dev) = DevServer::start("reject").await else {
        return;
    };
    let deletes = Arc::new(AtomicUsize::new(0));
    let agent = cleaner(&deletes);
    let _worker = Worker::new(dev.server("reject"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("reject").await;
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    until("the call to wait for approval", async || {
        !handle.pending().await.unwrap().is_empty()
    })
    .await;
    handle
        .decide([Decision::Reject {
            call_id: "d1".into(),
            reason: "not today".into(),
        }])
        .await
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(
        out.output.as_deref(),
        Some("done: the call was rejected: not today")
    );
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    // The events tell the wait (the run's course ends there, as in-process, and the stream goes
    // on past it) and the person's decision, in order.
    let kinds: Vec<&str> = handle
        .events()
        .map(|e| e.unwrap())
        .collect::<Vec<_>>()
        .await
        .iter()
        .map(RunEvent::kind)
        .filter(|k| {
            matches!(
                *k,
                "awaiting_approval" | "approval_resolved" | "run_finished"
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "awaiting_approval",
            "run_finished",
            "approval_resolved",
            "run_finished"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_streamed_answer_reaches_the_stream_whole() {
    let Some(dev) = DevServer::start("long").await else {
        return;
    };
    // 60,000 pieces (about 40,000 tokens' worth): recorded as they came, they would pass
    // Temporal's payload limit in the model step's result.
    let pieces: Vec<String> = (0..60_000).map(|i| format!("w{} ", i % 97)).collect();
    let answer: String = pieces.concat();
    let agent = Agent::builder("talker")
        .model(ScriptedModel::from_fn(move |_, _| {
            ScriptedTurn::new().with_text_deltas(pieces.clone())
        }))
        .build()
        .unwrap();
    let worker = Worker::new(dev.server("long"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("long").await;
    let handle = client.run("talker", "talk").start().await.unwrap();
    let mut streamed = String::new();
    let mut count = 0;
    let mut events = std::pin::pin!(handle.events());
    while let Some(event) = events.next().await {
        if let RunEvent::TextDelta { text, .. } = event.unwrap() {
            streamed.push_str(&text);
            count += 1;
        }
    }
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();
    assert_eq!(out.output.as_deref(), Some(answer.as_str()));
    assert_eq!(streamed, answer);
    // The first pieces as the model sent them, the rest joined.
    assert!(count > 2_000 && count < 60_000, "{count} pieces");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_reaches_the_model_on_temporal_and_one_too_large_for_its_history_is_refused() {
    let Some(dev) = DevServer::start("media").await else {
        return;
    };
    let model = ScriptedModel::new().text("a picture").record_requests(true);
    let agent = Agent::builder("viewer")
        .model(model.clone())
        .build()
        .unwrap();
    let _worker = Worker::new(dev.server("media"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("media").await;
    let small = agentry::Part::image(vec![7u8; 20_000], "image/png");
    let handle = client
        .run(
            "viewer",
            [agentry::Part::text("what is this?"), small.clone()],
        )
        .start()
        .await
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("a picture"));
    let sent = &model.requests()[0].messages[0];
    assert_eq!(
        sent.content().unwrap().parts()[1],
        small,
        "the bytes, whole"
    );
    // Past what a workflow's history carries: refused before anything starts, saying why.
    let large = agentry::Part::image(vec![7u8; 1_500_000], "image/png");
    let refused = client.run("viewer", [large]).start().await.err().unwrap();
    assert!(
        refused
            .to_string()
            .contains("give large images and documents by URL"),
        "{refused}"
    );
}
