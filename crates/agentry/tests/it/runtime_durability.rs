//! What completed is never done again: a run's outcome is stored before its RunEnd hooks run, and
//! a cancellation never cuts a checkpoint off half-way, so what the caller is told, what the
//! store holds and what a resume does agree.

use agentry::prelude::*;
use agentry::{
    Checkpoint, MemoryStore, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent,
    StoredRun,
};
use agentry::{Message, ModelErrorKind, ModelRequest, RunOptions, ScriptedTurn, hooks::RunEnd};
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
    echo_steps(1, model_calls, tool_calls)
}

/// `steps` steps of one `echo` call each (ids `c1`, `c2`, ...), then the answer `done`; counts
/// model and tool calls.
fn echo_steps(steps: usize, model_calls: Arc<AtomicU32>, tool_calls: Arc<AtomicU32>) -> Agent {
    let model = ScriptedModel::from_fn(move |_, req| {
        model_calls.fetch_add(1, Ordering::SeqCst);
        match results_in(req) {
            k if k < steps => ScriptedTurn::new().with_tool_call_id(
                format!("c{}", k + 1),
                "echo",
                json!({"text": "ping"}),
            ),
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
        .run(&agent, "go")
        .with(RunOptions::new().run_id("r1"))
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

/// The `RunStore` methods named, passed on to `self.inner` (for the test stores below, each of
/// which changes only a few).
macro_rules! delegate_to_inner {
    ($($method:ident),* $(,)?) => {
        $(delegate_to_inner!(@one $method);)*
    };
    (@one load) => {
        fn load<'a>(
            &'a self,
            run_id: &'a str,
        ) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>> {
            self.inner.load(run_id)
        }
    };
    (@one claim) => {
        fn claim<'a>(
            &'a self,
            run_id: &'a str,
            lease: u64,
            status: RunStatus,
            hold: Duration,
        ) -> BoxFuture<'a, Result<u64, StoreError>> {
            self.inner.claim(run_id, lease, status, hold)
        }
    };
    (@one renew) => {
        fn renew<'a>(
            &'a self,
            run_id: &'a str,
            lease: u64,
            hold: Duration,
        ) -> BoxFuture<'a, Result<agentry::Renewal, StoreError>> {
            self.inner.renew(run_id, lease, hold)
        }
    };
    (@one list) => {
        fn list<'a>(
            &'a self,
            query: &'a RunQuery,
        ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>> {
            self.inner.list(query)
        }
    };
    (@one events) => {
        fn events<'a>(
            &'a self,
            run_id: &'a str,
        ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
            self.inner.events(run_id)
        }
    };
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
    delegate_to_inner!(load, claim, renew, list, events);
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
    let handle = runtime
        .run(&agent, "go")
        .with(RunOptions::new().run_id("r1"))
        .start();
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
        .run(&agent, "go")
        .with(RunOptions::new().run_id("r1"))
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

/// A store whose `fail_at`th checkpoint is taken over and then not written, as a commit that
/// fails after the checkpoint was queued: its outcome is an error, and the store never sees it.
/// Every other operation goes to `inner`.
#[derive(Clone)]
struct FailingCommit {
    inner: MemoryStore,
    saves: Arc<AtomicU32>,
    fail_at: u32,
}

impl RunStore for FailingCommit {
    fn name(&self) -> &str {
        "failing-commit"
    }
    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.save_queued(checkpoint, false).await?.await })
    }
    fn save_queued<'a>(
        &'a self,
        checkpoint: Checkpoint<'a>,
        more_soon: bool,
    ) -> BoxFuture<'a, Result<agentry::QueuedSave, StoreError>> {
        if self.saves.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_at {
            let failed = StoreError::backend("failing-commit", "injected commit failure");
            return Box::pin(async move {
                Ok(Box::pin(std::future::ready(Err(failed))) as agentry::QueuedSave)
            });
        }
        self.inner.save_queued(checkpoint, more_soon)
    }
    delegate_to_inner!(load, claim, renew, list, events);
}

/// The steps of the `step_finished` events stored for `run_id`.
async fn finished_steps(store: &dyn RunStore, run_id: &str) -> Vec<u64> {
    store
        .events(run_id)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event.kind == "step_finished")
        .map(|e| e.event.data["step"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_checkpoint_whose_commit_fails_after_it_was_queued_leaves_the_run_whole() {
    // Checkpoints: 1 the start, 2 step 1's tool turn, 3 step 1's end (handed over without
    // waiting; the next is built on it), 4 step 2's tool turn, 5 step 2's end, ...
    for fail_at in 1..=8 {
        let store = FailingCommit {
            inner: MemoryStore::new(),
            saves: Arc::new(AtomicU32::new(0)),
            fail_at,
        };
        let runtime = Runtime::new().store(store.clone());
        let agent = echo_steps(3, Arc::default(), Arc::default());
        let err = runtime
            .run(&agent, "go")
            .with(RunOptions::new().run_id("r1"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("injected commit failure"),
            "checkpoint {fail_at}: {err}"
        );
        // The failure is recorded on the last checkpoint the run reached, whole, with every
        // event up to the failure: those of the checkpoint that failed, and of any built on it,
        // are not lost (so the log may name a step the snapshot does not hold: it ran).
        let Some(stored) = store.load("r1").await.unwrap() else {
            // The first checkpoint failed, and with it the record of the failure: no run.
            assert_eq!(fail_at, 1);
            continue;
        };
        assert_eq!(
            stored.snapshot.status(),
            RunStatus::Failed,
            "checkpoint {fail_at}"
        );
        let before = finished_steps(&store, "r1").await;
        let steps_done = u64::from(stored.snapshot.step);
        let ran = before.len() as u64;
        assert!(ran >= steps_done, "checkpoint {fail_at}: {before:?}");
        assert_eq!(
            before,
            (1..=ran).collect::<Vec<_>>(),
            "checkpoint {fail_at}: each step that ran, once"
        );
        // It resumes from there to the same end, doing again only the steps after it.
        let out = runtime.resume(&agent, "r1").await.unwrap();
        assert_eq!(out.output.as_deref(), Some("done"), "checkpoint {fail_at}");
        let uninterrupted = Runtime::new()
            .run(&echo_steps(3, Arc::default(), Arc::default()), "go")
            .await
            .unwrap();
        assert_eq!(out.messages.to_vec(), uninterrupted.messages.to_vec());
        let again = (steps_done + 1..=4).collect::<Vec<_>>();
        assert_eq!(
            finished_steps(&store, "r1").await,
            [before, again].concat(),
            "checkpoint {fail_at}"
        );
    }
}

/// A store that takes each renewal at once but gets to it only after a save released the run's
/// lease: a renewal that raced the releasing save and landed after it (as on a store whose
/// operations queue behind a large checkpoint).
#[derive(Clone)]
struct LateRenewals {
    inner: MemoryStore,
    released: Arc<tokio::sync::watch::Sender<bool>>,
    late: Arc<AtomicU32>,
}

impl RunStore for LateRenewals {
    fn name(&self) -> &str {
        "late-renewals"
    }
    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let release = checkpoint.hold.is_none();
            self.inner.save(checkpoint).await?;
            if release {
                self.released.send_replace(true);
            }
            Ok(())
        })
    }
    delegate_to_inner!(load, claim);
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<agentry::Renewal, StoreError>> {
        // Taken (it goes on if its caller stops waiting), and done after the release.
        let (inner, late, run_id) = (self.inner.clone(), self.late.clone(), run_id.to_string());
        let mut released = self.released.subscribe();
        let renewal = tokio::spawn(async move {
            let _ = released.wait_for(|released| *released).await;
            let renewed = inner.renew(&run_id, lease, hold).await;
            late.fetch_add(1, Ordering::SeqCst);
            renewed
        });
        Box::pin(async move { renewal.await.expect("the renewal ran") })
    }
    delegate_to_inner!(list, events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_lands_after_the_releasing_save_does_not_take_the_run_back() {
    let store = LateRenewals {
        inner: MemoryStore::new(),
        released: Arc::new(tokio::sync::watch::Sender::new(false)),
        late: Arc::new(AtomicU32::new(0)),
    };
    // Renewed every 20 ms: a renewal is under way when the run is cancelled.
    let runtime = Runtime::new()
        .store(store.clone())
        .lease_ttl(Duration::from_millis(60));
    let hang = tool(
        "hang",
        "Never returns.",
        |_a: Text, _ctx: ToolCtx| async move {
            std::future::pending::<()>().await;
            Ok("never")
        },
    );
    let agent = Agent::builder("hanging")
        .model(ScriptedModel::new().tool_call("hang", json!({"text": "x"})))
        .tool(hang)
        .build()
        .unwrap();
    let handle = runtime
        .run(&agent, "go")
        .with(RunOptions::new().run_id("r1"))
        .start();
    tokio::time::sleep(Duration::from_millis(200)).await;
    handle.cancel();
    assert_eq!(handle.result().await.unwrap().stop, StopReason::Cancelled);
    // The renewal waiting for the release has landed.
    let start = std::time::Instant::now();
    while store.late.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no renewal landed"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The run is free at once: no lease was taken back.
    let claimed = store
        .inner
        .claim("r1", 0, RunStatus::Cancelled, Duration::ZERO)
        .await;
    assert!(matches!(claimed, Ok(1)), "{claimed:?}");
}
