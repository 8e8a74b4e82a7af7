//! Cancellation: by token, by handle, mid-tool, and what hooks see.

use super::*;
use agentry::{MemoryStore, RunStore};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[tokio::test]
async fn cancel_through_the_handle_while_a_tool_runs() {
    let ends: Shared<StopReason> = shared();
    let slow = tool(
        "slow",
        "Sleeps for an hour",
        |_: NoArgs, _ctx: ToolCtx| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok("woke up")
        },
    );
    let model = ScriptedModel::new()
        .tool_call("slow", json!({}))
        .text("never reached");
    let agent = recording_run_ends("sleeper", &model, slow, &ends);
    let store = MemoryStore::new();
    let mut handle = Runtime::new()
        .store(store.clone())
        .run(&agent, "go")
        .start();
    let run_id = handle.run_id().to_string();

    let before = events_until(&mut handle, |e| matches!(e, RunEvent::ToolStarted { .. })).await;
    assert!(matches!(before[0], RunEvent::RunStarted { .. }));
    let t0 = Instant::now();
    handle.cancel();
    let after = rest_of_stream(&mut handle).await;
    let out = tokio::time::timeout(PATIENCE, handle.result())
        .await
        .expect("the cancelled run did not end")
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "cancellation took {:?}",
        t0.elapsed()
    );

    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(out.run_id, run_id);
    assert_eq!(model.calls(), 1, "no model call after the cancellation");
    assert_eq!(
        take(&ends),
        [StopReason::Cancelled],
        "RunEnd sees the reason"
    );
    assert!(
        !after
            .iter()
            .any(|e| matches!(e, RunEvent::ToolFinished { .. })),
        "the tool never finished: {after:#?}"
    );
    match after.last() {
        Some(RunEvent::RunFinished {
            stop, run_id: id, ..
        }) => {
            assert_eq!(*stop, StopReason::Cancelled);
            assert_eq!(*id, run_id);
        }
        other => panic!("the stream should end with RunFinished, got {other:?}"),
    }
    // The state is checkpointed, marked cancelled.
    let snap = store
        .load(&run_id)
        .await
        .unwrap()
        .expect("a checkpoint")
        .snapshot;
    assert_eq!(snap.stop, Some(StopReason::Cancelled));
    assert_eq!(snap.messages[0].text(), "go");
}

#[tokio::test]
async fn cancelling_before_the_tool_returns_drops_its_work() {
    // A tool that cancels its own run and then goes on working (awaits): the run ends at that
    // await point, and the rest of the tool never runs.
    let reached = Arc::new(Mutex::new(false));
    let reached2 = reached.clone();
    let quitter = tool("quit", "Cancels the run", move |_: NoArgs, ctx: ToolCtx| {
        let reached = reached2.clone();
        async move {
            ctx.cancellation().cancel();
            tokio::time::sleep(Duration::from_millis(50)).await;
            *reached.lock().unwrap() = true;
            Ok("still here")
        }
    });
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("never reached");
    let agent = Agent::builder("quitter")
        .model(model.clone())
        .tool(quitter)
        .build()
        .unwrap();
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert!(!*reached.lock().unwrap());
}

#[tokio::test]
async fn a_tool_that_cancels_its_run_and_returns_stops_the_run() {
    let ends: Shared<StopReason> = shared();
    let quitter = tool(
        "quit",
        "Cancels the run",
        |_: NoArgs, ctx: ToolCtx| async move {
            ctx.cancellation().cancel();
            Ok("cancelled the run")
        },
    );
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("should not be reached");
    let agent = recording_run_ends("quitter", &model, quitter, &ends);
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled, "output: {:?}", out.output);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1, "no model call after the cancellation");
    assert_eq!(take(&ends), [StopReason::Cancelled]);
}

#[tokio::test]
async fn a_hook_that_cancels_the_run_stops_it() {
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("should not be reached");
    let noop = tool(
        "quit",
        "Does nothing",
        |_: NoArgs, _ctx: ToolCtx| async move { Ok("ok") },
    );
    let agent = Agent::builder("quitter")
        .model(model.clone())
        .tool(noop)
        .after_tool(|ev, ctx| async move {
            ctx.cancellation().cancel();
            Ok(ev)
        })
        .build()
        .unwrap();
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled, "output: {:?}", out.output);
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn cancelling_a_started_run_before_it_starts_ends_it_cancelled() {
    let model = ScriptedModel::new().text("hello");
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    let handle = Runtime::new().run(&agent, "go").start();
    handle.cancel();
    let out = tokio::time::timeout(PATIENCE, handle.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 0);
}

#[tokio::test]
async fn a_left_run_stands_at_its_last_checkpoint_released_and_resumes_to_its_end() {
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let slow = tool(
        "slow",
        "Sleeps on its first call",
        move |_: NoArgs, _ctx: ToolCtx| {
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if n == 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok("woke up")
            }
        },
    );
    let model = ScriptedModel::new()
        .tool_call("slow", json!({}))
        .text("done");
    let agent = Agent::builder("sleeper")
        .model(model)
        .tool(slow)
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let mut handle = runtime.run(&agent, "go").start();
    let run_id = handle.run_id().to_string();
    events_until(&mut handle, |e| matches!(e, RunEvent::ToolStarted { .. })).await;
    handle.leave();
    rest_of_stream(&mut handle).await;
    let err = tokio::time::timeout(PATIENCE, handle.result())
        .await
        .expect("the left run did not stop")
        .unwrap_err();
    assert!(matches!(err, agentry::Error::Left { .. }), "{err}");
    assert!(
        err.to_string().contains("left at its last checkpoint"),
        "{err}"
    );

    // Not cancelled: running, its lease released, so it is resumed at once.
    let stored = store.load(&run_id).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), agentry::RunStatus::Running);
    assert!(stored.snapshot.stop.is_none());
    assert!(stored.driver_gone(agentry::store::now_ms()));
    let out = runtime.resume(&agent, &run_id).await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the call in flight ran again"
    );
}
