//! A store that goes away and comes back: Postgres restarted while a run's tool call is in
//! flight (the run goes on as if nothing happened), Postgres down when a checkpoint is due (the
//! run fails naming the store and what to do, then resumes to the end an uninterrupted run
//! reaches once the server is back), and a SQLite file on a read-only disk (refused when opened,
//! naming the file and why, before any run starts).

use crate::runtime_store_faults::{
    BUSY, Fault, LEASE, Point, Tmpfs, agent, resumes_to_the_same_end,
};
use crate::support::TempDir;
use crate::support::own_postgres::OwnPostgres;
use agentry::prelude::*;
use agentry::{RunOptions, RunStatus, RunStore};
use agentry_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the store waits for a connection here (10 s by default).
const CONNECT: Duration = Duration::from_secs(2);

async fn connect(server: &OwnPostgres) -> Arc<dyn RunStore> {
    Arc::new(
        PostgresStore::options(&server.url())
            .lock_timeout(BUSY)
            .connect_timeout(CONNECT)
            .connect()
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_during_a_tool_call_leaves_the_run_going_on_whole() {
    let Some(server) = OwnPostgres::start() else {
        return;
    };
    let server = Arc::new(server);
    let store = connect(&server).await;
    // While step 2's tool call runs, the server restarts: every pooled connection is cut.
    let restarting = server.clone();
    let fault = Fault::at(Point::Tool(2), move || {
        restarting.stop();
        restarting.up();
    });
    let out = Runtime::new()
        .store(store.clone())
        .lease_ttl(LEASE)
        .run(&agent(fault, None), "Do 3 steps.")
        .with(RunOptions::new().run_id("restarted"))
        .await
        .expect("the run goes on once the server is back");
    assert_eq!(out.output.as_deref(), Some("all 3 steps done"));
    let stored = store.load("restarted").await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Finished);
    assert_eq!(stored.snapshot.messages.len(), out.messages.len());
    let seqs: Vec<u64> = store
        .events("restarted")
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_at_a_checkpoint_fails_the_run_naming_the_store_and_it_resumes_once_back() {
    let Some(server) = OwnPostgres::start() else {
        return;
    };
    let server = Arc::new(server);
    let store = connect(&server).await;
    // The server stops during step 2's tool call and is still down when its checkpoint is due.
    let stopping = server.clone();
    let fault = Fault::at(Point::Tool(2), move || stopping.stop());
    let started = Instant::now();
    let err = Runtime::new()
        .store(store.clone())
        .lease_ttl(LEASE)
        .run(&agent(fault, None), "Do 3 steps.")
        .with(RunOptions::new().run_id("down"))
        .await
        .expect_err("the store is down");
    let waited = started.elapsed();
    assert!(matches!(err, Error::Store(_)), "{err:?}");
    let message = err.to_string();
    eprintln!("failed after {waited:?}: {message}");
    assert!(message.contains("postgres:"), "names the store: {message}");
    assert!(
        message.contains("check that the server is running"),
        "says what to do: {message}"
    );
    // The checkpoint that is due waits for a connection, at most twice (the step's own and
    // the one queued before it), and recording the failure once more.
    assert!(
        waited < CONNECT * 3 + Duration::from_secs(3),
        "the failure comes within the store's connect limit, not never: {waited:?}"
    );
    // Back: the run (its failure could not be written, so it is still running on its last
    // checkpoint, its lease lapsing) resumes to the uninterrupted end.
    server.up();
    resumes_to_the_same_end(store, "down", RunStatus::Running, None, "postgres down").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_on_a_read_only_disk_is_refused_at_open_naming_the_file() {
    let dir = TempDir::new();
    let mount = dir.path().join("disk");
    std::fs::create_dir(&mount).unwrap();
    let Some(disk) = Tmpfs::mount(&mount, "16m") else {
        return;
    };
    // A store with one finished run on it, closed; then the disk turns read-only.
    let existing = mount.join("runs.db");
    {
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&existing).await.unwrap());
        Runtime::new()
            .store(store.clone())
            .run(&agent(Fault::none(), None), "Do 3 steps.")
            .with(RunOptions::new().run_id("kept"))
            .await
            .unwrap();
    }
    disk.read_only();
    for path in [existing.clone(), mount.join("new.db")] {
        let err = SqliteStore::open(&path)
            .await
            .err()
            .unwrap_or_else(|| panic!("{} opened on a read-only disk", path.display()));
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string()),
            "names the file: {message}"
        );
        assert!(
            message.contains("read-only") || message.contains("readonly"),
            "says why: {message}"
        );
    }
    drop(disk);
}
