//! Runs across processes, on real stores (SQLite, and Postgres when the test server is
//! reachable): a process killed with SIGKILL in the middle of a tool call is resumed by another,
//! losing nothing and doing no checkpointed step again; two processes that continue one paused
//! run at the same moment, of which exactly one wins.
//!
//! The other processes are this test binary run again with `child_role` and a role in
//! `AGENTRY_TEST_CHILD`.

use crate::support::{Backend, Step, TempDir, open_spec, results_in};
use agentry::prelude::*;
use agentry::{Decision, RunStatus, RunStore, StoreError};
use agentry::{RunOptions, ScriptedTurn};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "AGENTRY_TEST_CHILD";
const STORE: &str = "AGENTRY_TEST_CHILD_STORE";
const DIR: &str = "AGENTRY_TEST_CHILD_DIR";
const RUN: &str = "AGENTRY_TEST_CHILD_RUN";

/// The workers' leases: a killed worker's run can be taken over this long after its last
/// renewal (a third of it).
const LEASE: Duration = Duration::from_secs(3);

#[derive(Deserialize, JsonSchema)]
struct Days {
    days: u32,
}

fn append(path: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Four steps, one tool call each. The tool logs each call with its idempotency key to
/// `calls.log`; at step `hang_at` it says so in `inflight` and never returns.
fn worker(dir: &Path, hang_at: Option<u32>) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        k @ 0..4 => ScriptedTurn::new().with_tool_call_id(
            format!("c{}", k + 1),
            "work",
            json!({"n": k + 1}),
        ),
        _ => ScriptedTurn::text("all 4 steps done"),
    });
    let dir = dir.to_path_buf();
    let work = tool("work", "Does one step.", move |a: Step, ctx: ToolCtx| {
        let dir = dir.clone();
        async move {
            append(
                &dir.join("calls.log"),
                &format!("{} {}", a.n, ctx.idempotency_key()),
            );
            if Some(a.n) == hang_at {
                std::fs::write(dir.join("inflight"), "").unwrap();
                tokio::time::sleep(Duration::from_secs(3600)).await;
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

/// Deletes old logs, with approval; each deletion is a line in `deletes.log`.
fn cleaner(dir: &Path) -> Agent {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        0 => ScriptedTurn::new().with_tool_call_id("d1", "delete_logs", json!({"days": 30})),
        _ => ScriptedTurn::text("done"),
    });
    let dir = dir.to_path_buf();
    let delete = tool(
        "delete_logs",
        "Deletes old logs.",
        move |a: Days, _c: ToolCtx| {
            let dir = dir.clone();
            async move {
                append(&dir.join("deletes.log"), &a.days.to_string());
                Ok("deleted")
            }
        },
    )
    .needs_approval();
    Agent::builder("cleaner")
        .model(model)
        .tool(delete)
        .build()
        .unwrap()
}

/// This binary again, as a child with `role`.
fn spawn_child(role: &str, store: &str, dir: &Path, run_id: &str, index: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "runtime_processes::child_role",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(STORE, store)
        .env(DIR, dir)
        .env(RUN, run_id)
        .env("AGENTRY_TEST_CHILD_INDEX", index.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn wait_for(path: &Path, what: &str) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The entry point of the child processes; does nothing in the test run itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let store = open_spec(&std::env::var(STORE).unwrap()).await;
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let run_id = std::env::var(RUN).unwrap();
    match role.as_str() {
        // Runs the worker until it is killed in the middle of step 3.
        "work" => {
            let out = Runtime::new()
                .store(store)
                .lease_ttl(LEASE)
                .run(&worker(&dir, Some(3)), "Do 4 steps.")
                .with(RunOptions::new().run_id(run_id))
                .await;
            panic!("the worker was to be killed, but it ended: {out:?}");
        }
        // Says it is ready, waits for the signal, then approves the paused run.
        "decide" => {
            let index = std::env::var("AGENTRY_TEST_CHILD_INDEX").unwrap();
            std::fs::write(dir.join(format!("ready-{index}")), "").unwrap();
            wait_for(&dir.join("go"), "the go signal");
            let out = Runtime::new()
                .store(store)
                .decide(&cleaner(&dir), &run_id, [Decision::approve("d1")])
                .await;
            match out {
                Ok(out) => println!("RESULT ok {:?}", out.stop),
                Err(e) => println!("RESULT err {e}"),
            }
        }
        // Says it is ready, waits for the signal, then resumes the dead worker's run, again and
        // again while the dead process's lease has not expired.
        "resume" => {
            let index = std::env::var("AGENTRY_TEST_CHILD_INDEX").unwrap();
            std::fs::write(dir.join(format!("ready-{index}")), "").unwrap();
            wait_for(&dir.join("go"), "the go signal");
            let runtime = Runtime::new().store(store).lease_ttl(LEASE);
            let agent = worker(&dir, None);
            let start = Instant::now();
            let out = loop {
                match runtime.resume(&agent, &run_id).await {
                    Err(Error::Store(StoreError::Leased { .. }))
                        if start.elapsed() < LEASE * 10 =>
                    {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => break other,
                }
            };
            match out {
                Ok(out) => println!("RESULT ok {:?}", out.output),
                Err(e) => println!("RESULT err {e}"),
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_tool_call_is_resumed_by_another_and_loses_nothing() {
    for backend in Backend::all().await {
        let dir = TempDir::new();
        let run_id = format!("killed-{}", backend.name());
        let mut child = spawn_child("work", &backend.spec(), dir.path(), &run_id, 0);
        wait_for(&dir.path().join("inflight"), "the worker to reach step 3");
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        // The store has the run as the dead process left it: under way, step 3's call pending.
        let store = backend.open().await;
        let stored = store.load(&run_id).await.unwrap().unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Running);
        let pending: Vec<&str> = stored
            .snapshot
            .pending_tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(pending, ["c3"], "{}", backend.name());

        // The dead process's lease has not expired yet: the run is not taken over.
        let resumer = Runtime::new().store(store.clone()).lease_ttl(LEASE);
        let agent = worker(dir.path(), None);
        match resumer.resume(&agent, &run_id).await {
            Err(Error::Store(StoreError::Leased { run_id: r, .. })) => assert_eq!(r, run_id),
            other => panic!("expected the run to be leased still, got {other:?}"),
        }
        // Once it expires, this process resumes it.
        let start = Instant::now();
        let resumed = loop {
            match resumer.resume(&agent, &run_id).await {
                Err(Error::Store(StoreError::Leased { .. })) => {
                    assert!(start.elapsed() < LEASE * 10, "the lease never expired");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => break other.unwrap(),
            }
        };
        assert_eq!(resumed.output.as_deref(), Some("all 4 steps done"));

        // Exactly what an uninterrupted run ends with.
        let other = TempDir::new();
        let uninterrupted = Runtime::new()
            .run(&worker(other.path(), None), "Do 4 steps.")
            .await
            .unwrap();
        assert_eq!(resumed.messages.to_vec(), uninterrupted.messages.to_vec());
        assert_eq!(resumed.steps, uninterrupted.steps);

        // Steps 1 and 2 (checkpointed) ran once; the call in flight was issued again with the
        // same idempotency key; step 4 ran once.
        assert_eq!(
            lines(&dir.path().join("calls.log")),
            [
                format!("1 {run_id}:c1"),
                format!("2 {run_id}:c2"),
                format!("3 {run_id}:c3"),
                format!("3 {run_id}:c3"),
                format!("4 {run_id}:c4"),
            ],
            "{}",
            backend.name()
        );
        let stored = store.load(&run_id).await.unwrap().unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_processes_continuing_one_paused_run_exactly_one_wins() {
    for backend in Backend::all().await {
        let dir = TempDir::new();
        let out = Runtime::new()
            .store(backend.open().await)
            .run(&cleaner(dir.path()), "Clean up.")
            .await
            .unwrap();
        assert!(out.stop.is_paused());

        let children: Vec<Child> = (0..2)
            .map(|i| spawn_child("decide", &backend.spec(), dir.path(), &out.run_id, i))
            .collect();
        for i in 0..2 {
            wait_for(
                &dir.path().join(format!("ready-{i}")),
                "a child to be ready",
            );
        }
        std::fs::write(dir.path().join("go"), "").unwrap();
        let results: Vec<String> = children
            .into_iter()
            .map(|c| {
                let output = c.wait_with_output().unwrap();
                assert!(output.status.success(), "{output:?}");
                let stdout = String::from_utf8(output.stdout).unwrap();
                stdout
                    .lines()
                    .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r.to_string()))
                    .unwrap_or_else(|| panic!("the child did not report: {stdout}"))
            })
            .collect();
        let won = results.iter().filter(|r| r.starts_with("ok")).count();
        assert_eq!(won, 1, "{}: {results:?}", backend.name());
        let lost = results.iter().find(|r| r.starts_with("err")).unwrap();
        assert!(
            lost.contains("taken over by another process")
                || lost.contains("it is not waiting for approval"),
            "{lost}"
        );
        assert_eq!(
            lines(&dir.path().join("deletes.log")),
            ["30"],
            "deleted once"
        );
        let stored = backend
            .open()
            .await
            .load(&out.run_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_three_processes_resuming_a_killed_workers_run_exactly_one_continues_it() {
    for backend in Backend::all().await {
        let dir = TempDir::new();
        let run_id = format!("raced-{}", backend.name());
        let mut worker_process = spawn_child("work", &backend.spec(), dir.path(), &run_id, 0);
        wait_for(&dir.path().join("inflight"), "the worker to reach step 3");
        worker_process.kill().unwrap(); // SIGKILL
        worker_process.wait().unwrap();

        // Three processes race to resume it, each trying until the dead worker's lease expires.
        let children: Vec<Child> = (0..3)
            .map(|i| spawn_child("resume", &backend.spec(), dir.path(), &run_id, i))
            .collect();
        for i in 0..3 {
            wait_for(
                &dir.path().join(format!("ready-{i}")),
                "a child to be ready",
            );
        }
        std::fs::write(dir.path().join("go"), "").unwrap();
        let results: Vec<String> = children
            .into_iter()
            .map(|c| {
                let output = c.wait_with_output().unwrap();
                assert!(output.status.success(), "{output:?}");
                let stdout = String::from_utf8(output.stdout).unwrap();
                stdout
                    .lines()
                    .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r.to_string()))
                    .unwrap_or_else(|| panic!("the child did not report: {stdout}"))
            })
            .collect();
        let won = results.iter().filter(|r| r.starts_with("ok")).count();
        assert_eq!(won, 1, "{}: {results:?}", backend.name());
        for lost in results.iter().filter(|r| r.starts_with("err")) {
            assert!(
                lost.contains("being driven by another process")
                    || lost.contains("taken over by another process")
                    || lost.contains("already ended"),
                "{lost}"
            );
        }
        // The call in flight was issued again once, by the winner; no step ran twice otherwise.
        assert_eq!(
            lines(&dir.path().join("calls.log")),
            [
                format!("1 {run_id}:c1"),
                format!("2 {run_id}:c2"),
                format!("3 {run_id}:c3"),
                format!("3 {run_id}:c3"),
                format!("4 {run_id}:c4"),
            ],
            "{}",
            backend.name()
        );
        let stored = backend.open().await.load(&run_id).await.unwrap().unwrap();
        assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    }
}
