//! A started run's handle says when the run is in the store, on real stores (SQLite, and
//! Postgres when the test server is reachable): once `RunHandle::stored` answers, a store opened
//! anew on the same database (as another process would) finds the run, while its first model
//! turn is still held back; a run that fails before its first step is stored with its failure;
//! a runtime without a store says at once that nothing will be.

use crate::support::Backend;
use agentry::RunStatus;
use agentry::hooks::{BoxError, on};
use agentry::prelude::*;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// An agent whose every model turn waits for a permit from `gate`.
fn gated(gate: &Arc<Semaphore>) -> Agent {
    let gate = Arc::clone(gate);
    Agent::builder("gated")
        .model(ScriptedModel::new().text("done"))
        .with(on::before_model(move |ev, _ctx| {
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await?.forget();
                Ok(ev)
            }
        }))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_the_handle_says_stored_another_process_finds_the_run() {
    for backend in Backend::all().await {
        let gate = Arc::new(Semaphore::new(0));
        let runtime = Runtime::new().store(backend.open().await);
        // Opened before: it looks the moment the handle answers.
        let other = backend.open().await;
        for i in 0..20 {
            let run = runtime.run(&gated(&gate), format!("go {i}")).start();
            assert!(
                run.stored().await,
                "{}: run {i} said unstored",
                backend.name()
            );
            let found = other.load(run.run_id()).await.unwrap();
            let found =
                found.unwrap_or_else(|| panic!("{}: run {i} is not in the store", backend.name()));
            assert_eq!(found.snapshot.status(), RunStatus::Running);
            gate.add_permits(1);
            let out = run.result().await.unwrap();
            assert_eq!(out.text, "done");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fails_before_its_first_step_is_stored_with_its_failure() {
    for backend in Backend::all().await {
        let agent = Agent::builder("refused")
            .model(ScriptedModel::new().text("never"))
            .with(
                on::run_start(|_ev, _ctx| async move { Err(BoxError::from("no runs today")) })
                    .named("closed"),
            )
            .build()
            .unwrap();
        let runtime = Runtime::new().store(backend.open().await);
        let run = runtime.run(&agent, "go").start();
        let stored = run.stored().await;
        let run_id = run.run_id().to_owned();
        let error = run.result().await.unwrap_err().to_string();
        assert!(error.contains("closed"), "{error}");
        assert!(stored, "{}: the failed run said unstored", backend.name());
        let found = backend.open().await.load(&run_id).await.unwrap().unwrap();
        assert_eq!(found.snapshot.status(), RunStatus::Failed);
    }
}

#[tokio::test]
async fn without_a_store_the_handle_says_at_once_that_the_run_is_not_stored() {
    let gate = Arc::new(Semaphore::new(0));
    let run = Runtime::new().run(&gated(&gate), "go").start();
    assert!(!run.stored().await);
    gate.add_permits(1);
    assert_eq!(run.result().await.unwrap().text, "done");
}
