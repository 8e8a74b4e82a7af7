//! One run, one driver, on real stores (SQLite, and Postgres when the test server is reachable):
//! a run that a process drives is never taken over while it renews its lease; a process that
//! loses its lease stops before its next effect; of several processes resuming a run whose
//! driver died, exactly one continues it.

use crate::support::{Backend, Step, TempDir, results_in, take_over};
use agentry::StoreError;
use agentry::prelude::*;
use agentry::{RunOptions, ScriptedTurn};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Barrier, Notify};

/// Short leases, so tests see several renewals and expiries.
const LEASE: Duration = Duration::from_millis(300);

/// Each call of `work` as a line `n key`, in the order they ran.
fn calls(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// What the tool of step 1 does after logging its call.
#[derive(Clone)]
enum AtStepOne {
    /// Returns at once.
    Go,
    /// Says it started, then waits for the gate.
    Wait {
        entered: Arc<Notify>,
        gate: Arc<Notify>,
    },
}

/// Two steps with one tool call each, logged to `calls.log`.
fn worker(dir: &Path, at_one: AtStepOne) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        k @ 0..2 => ScriptedTurn::new().with_tool_call_id(
            format!("c{}", k + 1),
            "work",
            json!({"n": k + 1}),
        ),
        _ => ScriptedTurn::text("both steps done"),
    });
    let log = dir.join("calls.log");
    let work = tool("work", "Does one step.", move |a: Step, ctx: ToolCtx| {
        let (log, at_one) = (log.clone(), at_one.clone());
        async move {
            let line = format!("{} {}\n", a.n, ctx.idempotency_key());
            let mut text = std::fs::read_to_string(&log).unwrap_or_default();
            text.push_str(&line);
            std::fs::write(&log, text).unwrap();
            if let (1, AtStepOne::Wait { entered, gate }) = (a.n, at_one) {
                entered.notify_one();
                gate.notified().await;
            }
            Ok(format!("step {} done", a.n))
        }
    });
    Agent::builder("worker")
        .model(model)
        .tool(work)
        .build()
        .unwrap()
}

fn runtime(store: Arc<dyn agentry::RunStore>) -> Runtime {
    Runtime::new().store(store).lease_ttl(LEASE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_never_takes_over_a_run_another_process_drives() {
    for backend in Backend::all().await {
        let dir = TempDir::new();
        let (entered, gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let at_one = AtStepOne::Wait {
            entered: entered.clone(),
            gate: gate.clone(),
        };
        let run_id = format!("driven-{}", backend.name());
        let driver = runtime(backend.open().await)
            .run(&worker(dir.path(), at_one), "Do 2 steps.")
            .with(RunOptions::new().run_id(run_id.clone()))
            .start();
        entered.notified().await;

        // For several lease durations, other processes try to resume it: each is refused and
        // runs nothing, because the driver renews its lease.
        let other = runtime(backend.open().await);
        let agent = worker(dir.path(), AtStepOne::Go);
        let start = Instant::now();
        let mut refused = 0;
        while start.elapsed() < LEASE * 4 {
            match other.resume(&agent, &run_id).await {
                Err(Error::Store(StoreError::Leased { run_id: r, .. })) => assert_eq!(r, run_id),
                other => panic!(
                    "{}: expected the run to be leased, got {other:?}",
                    backend.name()
                ),
            }
            refused += 1;
            tokio::time::sleep(LEASE / 4).await;
        }
        assert!(refused >= 4, "{refused}");

        gate.notify_one();
        let out = driver.result().await.unwrap();
        assert_eq!(out.output.as_deref(), Some("both steps done"));
        assert_eq!(
            calls(&dir.path().join("calls.log")),
            [format!("1 {run_id}:c1"), format!("2 {run_id}:c2")],
            "{}: each step ran once, by its driver",
            backend.name()
        );
        // Ended: nobody continues it.
        let ended = other.resume(&agent, &run_id).await.unwrap_err().to_string();
        assert!(ended.contains("already ended"), "{ended}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_loses_its_lease_stops_before_its_next_effect() {
    for backend in Backend::all().await {
        let dir = TempDir::new();
        let (entered, gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let at_one = AtStepOne::Wait {
            entered: entered.clone(),
            gate: gate.clone(),
        };
        let run_id = format!("lost-{}", backend.name());
        let driver = runtime(backend.open().await)
            .run(&worker(dir.path(), at_one), "Do 2 steps.")
            .with(RunOptions::new().run_id(run_id.clone()))
            .start();
        entered.notified().await;
        // Another process takes the run over while step 1's call is in flight.
        take_over(&backend.spec(), &run_id).await;
        gate.notify_one();

        match driver.result().await {
            Err(Error::Store(StoreError::Conflict { run_id: r, .. })) => assert_eq!(r, run_id),
            other => panic!("{}: expected a conflict, got {other:?}", backend.name()),
        }
        // Step 2's call never ran here, and the store still holds the run as it was before.
        assert_eq!(
            calls(&dir.path().join("calls.log")),
            [format!("1 {run_id}:c1")],
            "{}",
            backend.name()
        );
        let stored = backend.open().await.load(&run_id).await.unwrap().unwrap();
        assert_eq!(
            stored.snapshot.pending_tool_calls.len(),
            1,
            "{}",
            backend.name()
        );
        assert_eq!(stored.lease, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_several_processes_resuming_a_dead_drivers_run_exactly_one_continues_it() {
    for backend in Backend::all().await {
        for round in 0..3 {
            let dir = TempDir::new();
            let (entered, gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
            let at_one = AtStepOne::Wait {
                entered: entered.clone(),
                gate,
            };
            let run_id = format!("dead-{}-{round}", backend.name());
            // A driver that dies in the middle of step 1's call: its future is dropped, so it
            // stops renewing, and its lease expires.
            let dying = {
                let (rt, agent, id) = (
                    runtime(backend.open().await),
                    worker(dir.path(), at_one),
                    run_id.clone(),
                );
                tokio::spawn(async move {
                    rt.run(&agent, "Do 2 steps.")
                        .with(RunOptions::new().run_id(id))
                        .await
                })
            };
            entered.notified().await;
            dying.abort();
            let _ = dying.await;

            // Three processes try at once, and again until the lease has expired.
            let contenders = 3;
            let barrier = Arc::new(Barrier::new(contenders));
            let mut tries = Vec::new();
            for _ in 0..contenders {
                let (rt, agent, id, barrier) = (
                    runtime(backend.open().await),
                    worker(dir.path(), AtStepOne::Go),
                    run_id.clone(),
                    barrier.clone(),
                );
                tries.push(tokio::spawn(async move {
                    barrier.wait().await;
                    let start = Instant::now();
                    loop {
                        match rt.resume(&agent, &id).await {
                            Err(Error::Store(StoreError::Leased { .. }))
                                if start.elapsed() < LEASE * 20 =>
                            {
                                tokio::time::sleep(LEASE / 10).await;
                            }
                            other => return other,
                        }
                    }
                }));
            }
            let mut won = 0;
            for t in tries {
                match t.await.unwrap() {
                    Ok(out) => {
                        won += 1;
                        assert_eq!(out.output.as_deref(), Some("both steps done"));
                    }
                    Err(Error::Store(StoreError::Leased { .. } | StoreError::Conflict { .. })) => {}
                    Err(e) if e.to_string().contains("already ended") => {}
                    Err(e) => panic!("{}: unexpected {e}", backend.name()),
                }
            }
            assert_eq!(won, 1, "{} round {round}", backend.name());
            // Step 1's call: once by the dead driver, once more (same key) by the winner; step 2
            // once.
            assert_eq!(
                calls(&dir.path().join("calls.log")),
                [
                    format!("1 {run_id}:c1"),
                    format!("1 {run_id}:c1"),
                    format!("2 {run_id}:c2")
                ],
                "{} round {round}",
                backend.name()
            );
        }
    }
}
