//! Clients while workers come and go, or never come: a start on a task queue no worker polls
//! is an error within the client's wait; pending calls are listed with no worker running; a
//! decision no worker takes up fails within its time and is never applied later; a worker
//! spawned against no server says so at once, and one that runs before its server connects
//! when the server comes up; errors name agentry's run id in words.

use crate::runs::{cleaner, until};
use crate::support::{DevServer, free_port};

use agentry::prelude::*;
use agentry_temporal::{Client, Server, TemporalError, Worker, WorkerStop};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Fails when a message carries Rust's own forms.
fn in_words(text: &str) {
    for form in ["Some(", "None", "::", "Status {", "Code("] {
        assert!(!text.contains(form), "`{form}` in: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_on_a_task_queue_no_worker_polls_is_an_error_within_the_wait() {
    let Some(dev) = DevServer::start("no_worker_queue").await else {
        return;
    };
    let client = dev
        .client("nobody-polls-this")
        .await
        .worker_wait(Duration::from_secs(1));
    let started = Instant::now();
    let e = client.run("cleaner", "clean up").start().await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, TemporalError::NoWorker { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("no worker polls task queue `nobody-polls-this` on namespace `default`"),
        "{text}"
    );
    in_words(&text);

    // A worker on that queue is seen (within the default wait, which covers the moment between
    // its connection and its first poll), and runs start there.
    let deletes = Arc::new(AtomicUsize::new(0));
    let _worker = Worker::new(dev.server("nobody-polls-this"), Runtime::new())
        .agent(&cleaner(&deletes))
        .spawn()
        .unwrap();
    let client = dev.client("nobody-polls-this").await;
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    until("the call to wait for approval", async || {
        !handle.pending().await.unwrap().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_worker_pending_answers_and_a_decision_fails_in_time_and_never_applies_later() {
    let Some(dev) = DevServer::start("no_worker_decide").await else {
        return;
    };
    let deletes = Arc::new(AtomicUsize::new(0));
    let agent = cleaner(&deletes);
    let worker = Worker::new(dev.server("decide"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev
        .client("decide")
        .await
        .decision_timeout(Duration::from_secs(1));
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    let mut pending = Vec::new();
    until("the call to wait for approval", async || {
        pending = handle.pending().await.unwrap();
        !pending.is_empty()
    })
    .await;
    worker.stop().unwrap();

    // No worker runs: the waiting calls are still listed, at once.
    let asked = Instant::now();
    assert_eq!(handle.pending().await.unwrap(), pending);
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );

    // A decision nobody takes up fails within the client's time.
    let asked = Instant::now();
    let e = handle
        .decide([Decision::Approve {
            call_id: "d1".into(),
        }])
        .await
        .unwrap_err();
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );
    assert!(matches!(e, TemporalError::DecisionsNotTaken { .. }), "{e}");
    assert!(
        e.to_string().contains(&format!(
            "run `{}`: no worker took the decisions up within 1s, so they were not applied",
            handle.run_id()
        )),
        "{e}"
    );

    // A worker that starts later refuses the abandoned decision: the call still waits.
    let worker = Worker::new(dev.server("decide"), Runtime::new())
        .agent(&agent)
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(handle.pending().await.unwrap(), pending, "still waiting");
    assert_eq!(deletes.load(Ordering::SeqCst), 0, "the call did not run");

    // A decision with a worker running applies.
    handle
        .decide([Decision::Approve {
            call_id: "d1".into(),
        }])
        .await
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    assert_eq!(
        out.output.as_deref(),
        Some("done: deleted logs older than 30 days")
    );
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    assert!(handle.pending().await.unwrap().is_empty());
    worker.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_worker_reports_a_failed_connect_at_once() {
    let target = format!("http://127.0.0.1:{}", free_port());
    let started = Instant::now();
    let e = Worker::new(Server::new(&target), Runtime::new())
        .spawn()
        .expect_err("no server listens there");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, TemporalError::Connect { .. }), "{e}");
    assert!(
        e.to_string().contains(&format!(
            "cannot connect to the Temporal server at `{target}`"
        )),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_before_its_server_connects_when_it_comes_up() {
    if crate::support::temporal_cli("a_worker_started_before_its_server").is_none() {
        return;
    }
    let port = free_port();
    let server = Server::new(format!("http://127.0.0.1:{port}")).task_queue("early");
    let deletes = Arc::new(AtomicUsize::new(0));
    let agent = cleaner(&deletes);
    let stop = WorkerStop::new();
    let worker = {
        let (server, stop, agent) = (server.clone(), stop.clone(), agent.clone());
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(Worker::new(server, Runtime::new()).agent(&agent).run(stop))
        })
    };
    // The worker tries, fails and waits; then its server comes up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!worker.is_finished(), "it waits for its server");
    let Some(dev) = DevServer::start_at("a_worker_started_before_its_server", port).await else {
        return;
    };
    let client = Client::connect(dev.server("early")).await.unwrap();
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    until("the call to wait for approval", async || {
        !handle.pending().await.unwrap().is_empty()
    })
    .await;
    stop.stop();
    worker.join().unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_run_in_words() {
    let Some(dev) = DevServer::start("errors_in_words").await else {
        return;
    };
    let deletes = Arc::new(AtomicUsize::new(0));
    let _worker = Worker::new(dev.server("words"), Runtime::new())
        .agent(&cleaner(&deletes))
        .spawn()
        .unwrap();
    let client = dev.client("words").await;
    let options = || agentry::RunOptions::new().run_id("the-one");
    let handle = client
        .run("cleaner", "clean up")
        .with(options())
        .start()
        .await
        .unwrap();
    let again = client
        .run("cleaner", "clean up")
        .with(options())
        .start()
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        again,
        "run `the-one` could not be started: a run with id `the-one` is already under way; give the new run another id, or wait for that one"
    );
    let missing = client
        .handle("no-such-run")
        .pending()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        missing.starts_with("run `no-such-run`: no such run on this namespace"),
        "{missing}"
    );
    in_words(&missing);
    handle.cancel().await.unwrap();
}

/// One rule for a pause on both runtimes: Stop and RunEnd hooks see `awaiting approval` when
/// the run pauses, and the final reason when it ends; the hook-call record of a run paused,
/// decided and finished on Temporal is the in-process one, and `result()` of a paused run
/// returns it paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_for_approval_runs_the_same_hooks_as_in_process_and_result_says_it_waits() {
    let Some(dev) = DevServer::start("pause_parity").await else {
        return;
    };
    let decision = || Decision::Approve {
        call_id: "d1".into(),
    };

    // In-process, with a store to decide from.
    let local_log = crate::support::agents::Log::default();
    let deletes = Arc::new(AtomicUsize::new(0));
    let agent = cleaner(&deletes);
    let runtime =
        crate::support::agents::recording_runtime(&local_log).store(agentry::MemoryStore::new());
    let paused = runtime.run(&agent, "clean up").await.unwrap();
    assert!(paused.stop.is_paused(), "{:?}", paused.stop);
    let local_at_pause = local_log.lock().unwrap().len();
    let local = runtime
        .decide(&agent, paused.run_id.clone(), [decision()])
        .await
        .unwrap();

    // On Temporal.
    let remote_log = crate::support::agents::Log::default();
    let remote_deletes = Arc::new(AtomicUsize::new(0));
    let remote_agent = cleaner(&remote_deletes);
    let worker = Worker::new(
        dev.server("pause"),
        crate::support::agents::recording_runtime(&remote_log),
    )
    .agent(&remote_agent)
    .spawn()
    .unwrap();
    let client = dev.client("pause").await;
    let handle = client.run("cleaner", "clean up").start().await.unwrap();
    // Its result says it waits, as in-process `run` does, instead of blocking.
    let waiting: RunOutput<(), String> =
        tokio::time::timeout(Duration::from_secs(30), handle.result())
            .await
            .expect("result() returns while the run waits")
            .unwrap();
    assert_eq!(waiting.stop, paused.stop);
    assert_eq!(waiting.output, None);
    assert_eq!(waiting.messages.len(), paused.messages.len());
    assert_eq!(waiting.steps, paused.steps);
    let remote_at_pause = remote_log.lock().unwrap().len();
    handle.decide([decision()]).await.unwrap();
    let remote: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();

    assert_eq!(remote.output, local.output);
    assert_eq!(remote.stop, local.stop);
    let local_log = local_log.lock().unwrap().clone();
    let remote_log = remote_log.lock().unwrap().clone();
    assert_eq!(
        remote_at_pause, local_at_pause,
        "the same hooks up to the pause"
    );
    assert_eq!(remote_log, local_log);
    let ends: Vec<&String> = local_log
        .iter()
        .filter(|l| l.starts_with("RunEnd"))
        .collect();
    assert_eq!(
        ends.len(),
        2,
        "RunEnd at the pause and at the end: {local_log:#?}"
    );
    assert!(ends[0].contains("awaiting approval"), "{}", ends[0]);
}
