//! What completed is never done again: a run's outcome is stored before its RunEnd hooks run, and
//! a cancellation never cuts a checkpoint off half-way, so what the caller is told, what the
//! store holds and what a resume does agree.

use agentry::prelude::*;
use agentry::{
    Checkpoint, MemoryStore, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent,
    StoredRun,
};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

fn results_in(req: &ModelRequest) -> usize {
    req.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count()
}

/// One tool step, then the answer `done`; counts model and tool calls.
fn agent(model_calls: Arc<AtomicU32>, tool_calls: Arc<AtomicU32>) -> Agent {
    let model = ScriptedModel::from_fn(move |_, req| {
        model_calls.fetch_add(1, Ordering::SeqCst);
        match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("c1", "echo", json!({"text": "ping"})),
            _ => ScriptedTurn::text("done"),
        }
    });
    let echo = tool("echo", "Echoes.", move |a: Text, _ctx: ToolCtx| {
        let tool_calls = tool_calls.clone();
        async move {
            tool_calls.fetch_add(1, Ordering::SeqCst);
            Ok(a.text)
        }
    });
    Agent::builder("durable")
        .model(model)
        .tool(echo)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_run_end_hook_that_fails_after_the_answer_does_not_make_a_resume_do_the_run_again() {
    let (model_calls, tool_calls) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone()).with(
        on::run_end(|_ev, _ctx| async move { Err::<RunEnd, _>("the audit sink is down".into()) })
            .named("audit"),
    );
    let agent = agent(model_calls.clone(), tool_calls.clone());
    let err = runtime
        .run_with(&agent, "go", RunOptions::new().run_id("r1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("audit"), "{err}");

    // The outcome was stored before the hook ran.
    let stored = store.load("r1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    assert_eq!(stored.snapshot.output, Some(json!("done")));
    // So a resume does nothing again: no model call, no tool call.
    let again = runtime.resume(&agent, "r1").await.unwrap_err().to_string();
    assert!(again.contains("already ended"), "{again}");
    assert_eq!(model_calls.load(Ordering::SeqCst), 2);
    assert_eq!(tool_calls.load(Ordering::SeqCst), 1);
}

/// A store whose `block`th save waits for a gate (after saying it started).
#[derive(Clone)]
struct GatedStore {
    inner: MemoryStore,
    saves: Arc<AtomicU32>,
    block: u32,
    saving: Arc<Notify>,
    gate: Arc<Notify>,
}

impl RunStore for GatedStore {
    fn name(&self) -> &str {
        "gated"
    }
    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if self.saves.fetch_add(1, Ordering::SeqCst) + 1 == self.block {
                self.saving.notify_one();
                self.gate.notified().await;
            }
            self.inner.save(checkpoint).await
        })
    }
    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>> {
        self.inner.load(run_id)
    }
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.claim(run_id, lease, status, hold)
    }
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<agentry::Renewal, StoreError>> {
        self.inner.renew(run_id, lease, hold)
    }
    fn list<'a>(
        &'a self,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>> {
        self.inner.list(query)
    }
    fn events<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.events(run_id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_checkpoint_waits_for_it_and_a_resume_does_not_repeat_the_step() {
    let (model_calls, tool_calls) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    // Saves: 1 the new run, 2 the tool turn before its call runs, 3 the end of step 1 (with the
    // tool's result): that one is cancelled while it is being written.
    let store = GatedStore {
        inner: MemoryStore::new(),
        saves: Arc::new(AtomicU32::new(0)),
        block: 3,
        saving: Arc::new(Notify::new()),
        gate: Arc::new(Notify::new()),
    };
    let runtime = Runtime::new().store(store.clone());
    let agent = agent(model_calls.clone(), tool_calls.clone());
    let handle = runtime.start(&agent, "go", RunOptions::new().run_id("r1"));
    store.saving.notified().await;
    handle.cancel();
    // The cancellation waits for the checkpoint under way.
    tokio::task::yield_now().await;
    store.gate.notify_one();
    let out = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);

    // The store holds the end of step 1, cancelled: the tool's result is in it.
    let stored = store.load("r1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Cancelled);
    assert!(stored.snapshot.pending_tool_calls.is_empty());
    assert!(
        stored
            .snapshot
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool(r) if r.call_id == "c1")),
        "{:?}",
        stored.snapshot.messages
    );
    // The caller was told the same: the run's messages end with the result.
    assert_eq!(out.messages.len(), stored.snapshot.messages.len());

    // A resume goes on from there: the tool does not run again.
    let resumed = runtime.resume(&agent, "r1").await.unwrap();
    assert_eq!(resumed.output.as_deref(), Some("done"));
    assert_eq!(tool_calls.load(Ordering::SeqCst), 1);
    assert_eq!(model_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_failed_run_is_stored_failed_with_its_error_and_resumes_from_its_last_checkpoint() {
    let down = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let tool_calls = Arc::new(AtomicU32::new(0));
    let model = {
        let down = down.clone();
        ScriptedModel::from_fn(move |_, req| match results_in(req) {
            0 => ScriptedTurn::new().with_tool_call_id("c1", "echo", json!({"text": "ping"})),
            _ if down.load(Ordering::SeqCst) => {
                ScriptedTurn::error(ModelErrorKind::Auth, "the provider refused the key")
            }
            _ => ScriptedTurn::text("done"),
        })
    };
    let echo = {
        let tool_calls = tool_calls.clone();
        tool("echo", "Echoes.", move |a: Text, _ctx: ToolCtx| {
            let tool_calls = tool_calls.clone();
            async move {
                tool_calls.fetch_add(1, Ordering::SeqCst);
                Ok(a.text)
            }
        })
    };
    let agent = Agent::builder("durable")
        .model(model)
        .tool(echo)
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let err = runtime
        .run_with(&agent, "go", RunOptions::new().run_id("r1"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refused the key"), "{err}");

    // Listed as failed, with the error, at the end of the step that completed.
    let failed = store
        .list(&RunQuery::all().status(RunStatus::Failed))
        .await
        .unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].run_id, "r1");
    let stored = store.load("r1").await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Failed);
    assert!(
        stored
            .snapshot
            .error
            .as_deref()
            .is_some_and(|e| e.contains("refused the key")),
        "{:?}",
        stored.snapshot.error
    );
    assert!(stored.snapshot.pending_tool_calls.is_empty());

    // Once the cause is fixed, it resumes from there: the tool does not run again.
    down.store(false, Ordering::SeqCst);
    let out = runtime.resume(&agent, "r1").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    assert_eq!(tool_calls.load(Ordering::SeqCst), 1);
    let stored = store.load("r1").await.unwrap().unwrap();
    assert_eq!(
        (stored.snapshot.status(), stored.snapshot.error),
        (RunStatus::Finished, None)
    );
}
