//! `SqliteStore`: the conformance suite on a file (two stores on it, as two processes would
//! open it) and in memory, then what is particular to files: persistence, the schema's set-up,
//! records that cannot be read back.

use crate::support::*;

use crate::conformance::{self, Stores, event, full_snapshot, save, snapshot};
use agentry_core::{Message, RunQuery, RunStatus, RunStore, StopReason, StoreError};
use agentry_store::SqliteStore;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};

mod file {
    use super::*;

    /// Two stores on one new file.
    async fn open() -> Option<Stores> {
        let dir = TempDir::new();
        let path = dir.path().join("runs.db");
        Some(Stores {
            store: Box::new(SqliteStore::open(&path).await.unwrap()),
            other: Box::new(SqliteStore::open(&path).await.unwrap()),
            _cleanup: Some(Box::new(dir)),
        })
    }

    conformance_tests!(open());
}

mod in_memory {
    use super::*;

    /// A store in memory and a clone of it (a second `in_memory` would be another database).
    async fn open() -> Option<Stores> {
        let store = SqliteStore::in_memory().await.unwrap();
        Some(Stores {
            other: Box::new(store.clone()),
            store: Box::new(store),
            _cleanup: None,
        })
    }

    conformance_tests!(open());
}

#[tokio::test]
async fn runs_outlive_the_store_and_reopening_keeps_the_schema() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    let run = full_snapshot("run-1");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        save(&store, &run, 0, &[event("run_started", 1)])
            .await
            .unwrap();
        assert_eq!(
            store
                .claim("run-1", 0, RunStatus::Finished, conformance::HOLD)
                .await
                .unwrap(),
            1
        );
        store.pool().close().await;
    }

    for _ in 0..2 {
        let store = SqliteStore::open(&path).await.unwrap();
        let stored = store
            .load("run-1")
            .await
            .unwrap()
            .expect("the run persisted");
        assert_eq!((&stored.snapshot, stored.lease), (&run, 1));
        assert_eq!(store.events("run-1").await.unwrap().len(), 1);
        let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agentry_store_migrations")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(applied, 5, "the schema's five migrations, applied once");
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        store.pool().close().await;
    }
}

#[tokio::test]
async fn opening_creates_missing_directories_and_names_the_store_by_its_path() {
    let dir = TempDir::new();
    let path = dir.path().join("a").join("b").join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    assert!(path.is_file());
    assert_eq!(store.name(), format!("sqlite:{}", path.display()));
    assert!(format!("{store:?}").contains("SqliteStore"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_stores_may_open_a_new_file_at_once() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    let opens = (0..8).map(|_| SqliteStore::open(&path));
    let stores: Vec<SqliteStore> = futures::future::try_join_all(opens).await.unwrap();
    save(&stores[0], &snapshot("run-1"), 0, &[]).await.unwrap();
    for store in &stores {
        assert!(store.load("run-1").await.unwrap().is_some());
    }
}

#[tokio::test]
async fn a_path_that_cannot_be_a_directory_is_an_error_naming_it() {
    let dir = TempDir::new();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    let err = SqliteStore::open(file.join("runs.db")).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert!(message.contains("cannot create the directory"), "{message}");
    assert!(message.contains("plain-file"), "{message}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_an_error() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    std::fs::write(
        &path,
        "this is not a SQLite database, but it is long enough to look at",
    )
    .unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert!(
        message.contains(&format!("sqlite:{}", path.display())),
        "{message}"
    );
    assert!(message.contains("not a database"), "{message}");
}

#[tokio::test]
async fn an_unreadable_snapshot_is_a_backend_error_naming_the_run() {
    let store = SqliteStore::in_memory().await.unwrap();
    save(&store, &snapshot("run-1"), 0, &[]).await.unwrap();
    sqlx::query("UPDATE runs SET snapshot = '{\"garbage\": true}' WHERE run_id = 'run-1'")
        .execute(store.pool())
        .await
        .unwrap();
    match store.load("run-1").await {
        Err(StoreError::Backend {
            store: name,
            message,
        }) => {
            assert_eq!(name, "sqlite::memory:");
            assert!(message.contains("run `run-1`"), "{message}");
            assert!(message.contains("unreadable"), "{message}");
            assert!(message.contains("missing field"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }

    sqlx::query("UPDATE runs SET status = 'sleeping' WHERE run_id = 'run-1'")
        .execute(store.pool())
        .await
        .unwrap();
    let err = store.list(&RunQuery::all()).await.unwrap_err().to_string();
    assert!(
        err.contains("run `run-1`") && err.contains("`sleeping`"),
        "{err}"
    );
}

/// A file written by the first schema (histories inline in the snapshot, leases without expiry)
/// is brought up to date when opened: its runs load, and their next checkpoint moves the history
/// into the message log.
#[tokio::test]
async fn a_store_written_by_the_first_schema_still_loads_and_moves_into_the_log() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    let mut run = full_snapshot("run-old");
    run.stop = Some(StopReason::Cancelled);
    {
        // The first schema, applied as the first release of the store applied it.
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = SqlitePool::connect_with(options).await.unwrap();
        let mut first = Migrator::with_migrations(vec![Migration::new(
            1,
            "runs".into(),
            MigrationType::Simple,
            include_str!("../../migrations/sqlite/0001_runs.sql").into_sql_str(),
            false,
        )]);
        first.dangerous_set_table_name("agentry_store_migrations");
        first.run(&pool).await.unwrap();
        sqlx::query(
            "INSERT INTO runs (run_id, position, agent, session_id, parent_run_id, status, step, \
             lease, created_ms, updated_ms, snapshot) \
             VALUES ('run-old', 1, ?1, 'session-1', 'parent-1', 'cancelled', 4, 3, 1, 2, ?2)",
        )
        .bind(&run.agent)
        .bind(serde_json::to_string(&run).unwrap())
        .execute(&pool)
        .await
        .unwrap();
        for seq in 1..=2 {
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, at_ms, kind, data) \
                 VALUES ('run-old', ?1, 5, 'step_finished', '{}')",
            )
            .bind(seq)
            .execute(&pool)
            .await
            .unwrap();
        }
        pool.close().await;
    }

    let store = SqliteStore::open(&path).await.unwrap();
    let stored = store
        .load("run-old")
        .await
        .unwrap()
        .expect("the old run loads");
    assert_eq!((&stored.snapshot, stored.lease), (&run, 3));
    assert_eq!(stored.layout, None, "its history is still inline");
    // Its lease has no expiry: it can be claimed, and the next checkpoint logs the history.
    let lease = store
        .claim("run-old", 3, RunStatus::Cancelled, conformance::HOLD)
        .await
        .unwrap();
    assert_eq!(lease, 4);
    run.stop = None;
    run.messages.push(Message::user("resumed"));
    conformance::save(&store, &run, lease, &[event("run_resumed", 9)])
        .await
        .unwrap();
    let stored = store.load("run-old").await.unwrap().unwrap();
    assert_eq!(stored.snapshot, run);
    assert_eq!(stored.layout.map(|l| l.next), Some(4));
    let numbers: Vec<u64> = store
        .events("run-old")
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(numbers, [1, 2, 3], "events are numbered after the old ones");
}

#[tokio::test]
async fn the_write_ahead_log_is_copied_into_the_database_file_in_the_background() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let before = std::fs::metadata(&path).unwrap().len();
    let run = snapshot("run-1");
    for i in 0..300 {
        save(&store, &run, 0, &[event("step_finished", i)])
            .await
            .unwrap();
    }
    // Left to the store's own connection, the pages would stay in the log until it passed
    // 64 MiB; the checkpointer copies them a few hundred checkpoints in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::metadata(&path).unwrap().len() <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "the database file is still {before} bytes: no checkpoint copied the log into it"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(store.load("run-1").await.unwrap().unwrap().snapshot, run);
}

/// A checkpoint that finds the file locked by another process's write waits for it on the
/// store's thread, never on the caller's: the caller's runtime goes on meanwhile (here the
/// other writer itself runs on it), and the checkpoint lands once the write ends.
#[tokio::test(flavor = "current_thread")]
async fn a_checkpoint_waiting_for_another_writer_leaves_the_callers_thread_free() {
    let dir = TempDir::new();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    save(&store, &snapshot("run-1"), 0, &[]).await.unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut run = snapshot("run-1");
    run.messages
        .push(Message::user("written after the other writer"));
    let events = [event("step_finished", 1)];
    let saving = save(&store, &run, 0, &events);
    let other_writer = async {
        // Ten ticks of 20 ms; the longest gap between two says whether the thread was held.
        let mut longest = std::time::Duration::ZERO;
        for _ in 0..10 {
            let tick = std::time::Instant::now();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            longest = longest.max(tick.elapsed());
        }
        other.execute_batch("COMMIT").unwrap();
        longest
    };
    let (saved, longest) = tokio::join!(saving, other_writer);
    saved.expect("the checkpoint lands once the other write ends");
    assert!(
        longest < std::time::Duration::from_secs(1),
        "the caller's thread was held for {longest:?} while the checkpoint waited for the lock"
    );
    assert_eq!(store.load("run-1").await.unwrap().unwrap().snapshot, run);
}
