//! A worker killed with SIGKILL in the middle of a tool call: a second worker, in another
//! process, finishes the run. No completed step is done again: each model turn is asked for
//! once, each tool call that completed runs once, and the call that was in flight runs again
//! with the same idempotency key. The same holds for a call inside a sub-agent, which runs as a
//! child workflow: its parent's turns are not asked for again either.
//!
//! The hooks a killed run calls are the same on both runtimes: a process killed mid-call whose
//! run another resumes from its checkpoint calls, hook by hook, what a Temporal run whose worker
//! was killed at the same point calls.
//!
//! The workers are this test binary run again with `child_worker` and the server in
//! `AGENTRY_TEST_CHILD_TARGET`; the in-process run's process is `child_in_process`, its store
//! in `AGENTRY_TEST_CHILD_STORE`.

use crate::support::DevServer;
use crate::support::agents::{file_recording_runtime, results_in};
use agentry::RunOutput;
use agentry::prelude::*;
use agentry::{Message, RunOptions, ScriptedTurn};
use agentry_temporal::{Placement, Server, Worker, WorkerStop};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TARGET: &str = "AGENTRY_TEST_CHILD_TARGET";
const DIR: &str = "AGENTRY_TEST_CHILD_DIR";
const HANG_AT: &str = "AGENTRY_TEST_CHILD_HANG_AT";
const STORE: &str = "AGENTRY_TEST_CHILD_STORE";
/// How long an in-process run's lease lasts: a run whose process died is taken up after it.
const LEASE: Duration = Duration::from_secs(1);
const QUEUE: &str = "killed";

#[derive(Deserialize, JsonSchema)]
struct Step {
    n: u32,
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

/// Four steps, one tool call each. The model logs each turn it is asked for to `model.log`,
/// the tool each call with its idempotency key to `calls.log`; at step `hang_at` the tool says
/// so in `inflight` and never returns.
fn agent(dir: &Path, hang_at: Option<u32>) -> Agent {
    let log = dir.join("model.log");
    let model = ScriptedModel::from_fn(move |_, req| {
        let k = results_in(req);
        append(&log, &k.to_string());
        match k {
            k @ 0..4 => ScriptedTurn::new().with_tool_call_id(
                format!("c{}", k + 1),
                "work",
                json!({"n": k + 1}),
            ),
            _ => ScriptedTurn::text("all 4 steps done"),
        }
    });
    let hooks = dir.join("hooks.log");
    let dir = dir.to_path_buf();
    let work = tool("work", "Does one step.", move |a: Step, ctx: ToolCtx| {
        let dir = dir.clone();
        async move {
            append(
                &dir.join("calls.log"),
                &format!("{} {}", a.n, ctx.idempotency_key()),
            );
            if Some(a.n) == hang_at {
                append(&dir.join("inflight"), "");
                std::future::pending::<()>().await;
            }
            Ok(format!("step {} done", a.n))
        }
    });
    Agent::builder("stepper")
        .model(model)
        .tool(work)
        .before_tool(move |ev, _ctx| {
            let hooks = hooks.clone();
            async move {
                append(&hooks, ev.call_id());
                Ok(ev)
            }
        })
        .build()
        .unwrap()
}

/// `boss`, whose model hands the whole job to the `stepper` sub-agent (the agent above, its
/// turns logged to `boss.log`), then answers with what it said.
fn boss(dir: &Path, hang_at: Option<u32>) -> Agent {
    let log = dir.join("boss.log");
    let model = ScriptedModel::from_fn(move |_, req| {
        let k = results_in(req);
        append(&log, &k.to_string());
        match k {
            0 => ScriptedTurn::new().with_tool_call_id("s1", "stepper", json!({"input": "go"})),
            _ => ScriptedTurn::text(format!("boss: {}", req.messages.last().unwrap().text())),
        }
    });
    Agent::builder("boss")
        .model(model)
        .sub_agent(&agent(dir, hang_at))
        .build()
        .unwrap()
}

/// This binary again, as a worker process.
fn spawn_worker(target: &str, dir: &Path, hang_at: Option<u32>) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "worker_killed::child_worker",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(TARGET, target)
    .env(DIR, dir)
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    if let Some(n) = hang_at {
        cmd.env(HANG_AT, n.to_string());
    }
    cmd.spawn().unwrap()
}

/// The entry point of the worker processes; does nothing in the test run itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_worker() {
    let Ok(target) = std::env::var(TARGET) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let hang_at = std::env::var(HANG_AT).ok().map(|n| n.parse().unwrap());
    let runtime = file_recording_runtime(&dir.join("record.log"));
    Worker::new(Server::new(target).task_queue(QUEUE), runtime)
        .agent(&agent(&dir, hang_at))
        .agent(&boss(&dir, hang_at))
        .sticky_timeout(Duration::from_secs(1))
        .run(WorkerStop::new())
        .await
        .unwrap();
}

/// The process of an in-process run of the stepper on the SQLite store in
/// `AGENTRY_TEST_CHILD_STORE`, whose step 3 call hangs until the test kills it; does nothing in
/// the test run itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_in_process() {
    let Ok(store) = std::env::var(STORE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let store = agentry_store::SqliteStore::open(store).await.unwrap();
    let out = file_recording_runtime(&dir.join("record.log"))
        .store(store)
        .lease_ttl(LEASE)
        .run(&agent(&dir, Some(3)), "go")
        .with(RunOptions::new().run_id("killed-in-process"))
        .await;
    panic!("the process was to be killed, but its run ended: {out:?}");
}

/// Run `run_id` of the stepper with `placement`: its first worker is killed with SIGKILL while
/// step 3's call is in flight and a second worker, another process, finishes it. Returns the
/// run's output (checked to be the whole run's answer), the directory the workers logged to,
/// and how long after the kill the run ended.
async fn killed_and_replaced(
    dev: &DevServer,
    run_id: &str,
    placement: Placement,
) -> (RunOutput<(), String>, PathBuf, Duration) {
    let (out, dir, recovered) = killed_while(dev, "stepper", run_id, placement).await;
    assert_eq!(out.output.as_deref(), Some("all 4 steps done"));
    assert_eq!(out.steps, 5);
    (out, dir, recovered)
}

/// Run `run_id` of `agent` with `placement`, its first worker killed with SIGKILL while the
/// stepper's step 3 call is in flight and a second worker, another process, taking over.
async fn killed_while(
    dev: &DevServer,
    agent: &str,
    run_id: &str,
    placement: Placement,
) -> (RunOutput<(), String>, PathBuf, Duration) {
    let dir = dev.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let target = dev.server(QUEUE).target;
    let mut first = spawn_worker(&target, &dir, Some(3));
    let client = dev.client(QUEUE).await.placement(placement);
    let handle = client
        .run(agent, "go")
        .with(RunOptions::new().run_id(run_id))
        .start()
        .await
        .unwrap();
    let start = Instant::now();
    while !dir.join("inflight").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the first worker never reached step 3"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let killed_at = Instant::now();
    let mut second = spawn_worker(&target, &dir, None);
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    let recovered = killed_at.elapsed();
    second.kill().unwrap();
    second.wait().unwrap();

    assert_eq!(out.stop, StopReason::FinalAnswer);
    (out, dir, recovered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_sub_agent_is_replaced_and_neither_run_repeats_a_step() {
    let Some(dev) = DevServer::start("worker_killed_sub").await else {
        return;
    };
    let (out, dir, _) = killed_while(&dev, "boss", "killed-boss", Placement::Scheduled).await;
    assert_eq!(out.output.as_deref(), Some("boss: all 4 steps done"));
    // The parent's turns and the sub-agent's were each asked for once.
    assert_eq!(lines(&dir.join("boss.log")), ["0", "1"]);
    assert_eq!(lines(&dir.join("model.log")), ["0", "1", "2", "3", "4"]);
    // The sub-agent's calls, keyed by its own run (`<parent>/<call id>`): only the one in
    // flight ran again, with its key.
    assert_eq!(
        lines(&dir.join("calls.log")),
        [
            "1 killed-boss/s1:c1",
            "2 killed-boss/s1:c2",
            "3 killed-boss/s1:c3",
            "3 killed-boss/s1:c3",
            "4 killed-boss/s1:c4",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_tool_call_is_replaced_and_no_completed_step_runs_again() {
    let Some(dev) = DevServer::start("worker_killed").await else {
        return;
    };
    let (out, dir, recovered) = killed_and_replaced(&dev, "killed-1", Placement::Scheduled).await;
    // Each model turn was asked for once: none of the first worker's was asked again.
    assert_eq!(lines(&dir.join("model.log")), ["0", "1", "2", "3", "4"]);
    // Steps 1 and 2 ran once; step 3, in flight when the worker died, ran again with the same
    // idempotency key; step 4 once.
    assert_eq!(
        lines(&dir.join("calls.log")),
        [
            "1 killed-1:c1",
            "2 killed-1:c2",
            "3 killed-1:c3",
            "3 killed-1:c3",
            "4 killed-1:c4",
        ]
    );
    // BeforeTool decides with its call, in the call's activity: the call that ran again was
    // decided again, with the same call id (a hook that must count a call once keys on it).
    assert_eq!(
        lines(&dir.join("hooks.log")),
        ["c1", "c2", "c3", "c3", "c4"]
    );
    let results: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        ["step 1 done", "step 2 done", "step 3 done", "step 4 done"]
    );
    println!(
        "recovery: the run ended {:.2} s after its worker was killed (heartbeat limit 2 s, sticky timeout 1 s, a new worker process started meanwhile)",
        recovered.as_secs_f64()
    );
}

/// With every phase a local activity, a run survives its worker's SIGKILL too, but what the
/// worker ran since its last workflow task completed is not in the history: it runs again on the
/// next worker, tool calls with the same idempotency keys (the trade `Placement::Local` makes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_local_activities_a_killed_worker_is_replaced_and_repeats_calls_with_their_keys() {
    let Some(dev) = DevServer::start("worker_killed_local").await else {
        return;
    };
    let (out, dir, recovered) = killed_and_replaced(&dev, "killed-local", Placement::Local).await;
    let results: Vec<String> = out
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.content.text().into_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        ["step 1 done", "step 2 done", "step 3 done", "step 4 done"]
    );
    // Every call ran at least once and every attempt at step n carried the key of call n.
    let calls = lines(&dir.join("calls.log"));
    for n in 1..=4 {
        let attempts: Vec<&String> = calls
            .iter()
            .filter(|l| l.starts_with(&format!("{n} ")))
            .collect();
        assert!(!attempts.is_empty(), "step {n} never ran: {calls:?}");
        assert!(
            attempts
                .iter()
                .all(|l| **l == format!("{n} killed-local:c{n}")),
            "step {n} ran with another key: {calls:?}"
        );
    }
    // The call in flight when the worker died ran again.
    assert!(
        calls.iter().filter(|l| l.starts_with("3 ")).count() >= 2,
        "{calls:?}"
    );
    println!(
        "recovery with local activities: the run ended {:.2} s after its worker was killed (the workflow task timeout, 10 s by default, plus a new worker process)",
        recovered.as_secs_f64()
    );
}

/// The stepper run in-process on SQLite, its process SIGKILLed while step 3's call is in flight,
/// then resumed by this process once the dead one's lease expired. Returns the run's output and
/// the directory the runs logged to.
async fn killed_and_resumed_in_process(dir: &Path) -> RunOutput<(), String> {
    std::fs::create_dir_all(dir).unwrap();
    let store_path = dir.join("runs.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "worker_killed::child_in_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STORE, &store_path)
        .env(DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.join("inflight").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the in-process run never reached step 3"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let runtime = file_recording_runtime(&dir.join("record.log"))
        .store(agentry_store::SqliteStore::open(&store_path).await.unwrap())
        .lease_ttl(LEASE);
    let agent = agent(dir, None);
    let start = Instant::now();
    loop {
        match runtime.resume(&agent, "killed-in-process").await {
            Err(Error::Store(agentry::StoreError::Leased { .. })) => {
                assert!(start.elapsed() < LEASE * 20, "the lease never expired");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other.unwrap(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_calls_the_same_hooks_in_process_and_on_temporal() {
    let Some(dev) = DevServer::start("killed_record").await else {
        return;
    };
    let (on_temporal, temporal_dir, _) =
        killed_and_replaced(&dev, "killed-record", Placement::Scheduled).await;
    let in_process_dir = dev.dir().join("in-process");
    let in_process = killed_and_resumed_in_process(&in_process_dir).await;
    assert_eq!(in_process.output, on_temporal.output);
    assert_eq!(in_process.messages.to_vec(), on_temporal.messages.to_vec());
    // The same calls on both: the call in flight ran again, with its key.
    let calls = |dir: &Path, run_id: &str| -> Vec<String> {
        lines(&dir.join("calls.log"))
            .iter()
            .map(|l| l.replace(run_id, "RUN"))
            .collect()
    };
    assert_eq!(
        calls(&in_process_dir, "killed-in-process"),
        calls(&temporal_dir, "killed-record")
    );
    // And the same hooks, in the same order.
    let record = lines(&temporal_dir.join("record.log"));
    assert!(
        record
            .iter()
            .filter(|l| l.starts_with("BeforeTool stepper work"))
            .count()
            == 5,
        "the call in flight was decided again: {record:#?}"
    );
    assert_eq!(lines(&in_process_dir.join("record.log")), record);
}
