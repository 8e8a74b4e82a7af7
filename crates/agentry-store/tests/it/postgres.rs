//! `PostgresStore`: the conformance suite, then what is particular to a server.
//!
//! The tests need a PostgreSQL server whose URL is in `AGENTRY_TEST_POSTGRES_URL` (a user that
//! may create databases, e.g. `postgres://postgres@127.0.0.1:5432/postgres`). Each test creates
//! a database of its own and drops it at the end, so they can run in parallel. Without the
//! variable, or with the server unreachable, each test says it is skipped and returns without
//! running; under `CI=true` (as `.ci/run` sets it) it fails instead.

use crate::support::*;

use crate::conformance::{Stores, full_snapshot, save, snapshot};
use agentry_core::{RunStore, StoreError};
use agentry_store::PostgresStore;

/// Two stores on a new database: one on a pool of the test's, one connected by URL.
async fn open() -> Option<Stores> {
    let database = TestDatabase::create().await?;
    let store = PostgresStore::from_pool(database.pool().await)
        .await
        .unwrap();
    let other = PostgresStore::connect(&database.url()).await.unwrap();
    Some(Stores {
        store: Box::new(store),
        other: Box::new(other),
        _cleanup: Some(Box::new(database)),
    })
}

conformance_tests!(open());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_stores_may_connect_to_a_new_database_at_once() {
    let Some(database) = TestDatabase::create().await else {
        return;
    };
    let url = database.url();
    let connects = (0..4).map(|_| PostgresStore::connect(&url));
    let stores = futures::future::try_join_all(connects).await.unwrap();
    let run = full_snapshot("run-1");
    save(&stores[0], &run, 0, &[]).await.unwrap();
    for store in &stores {
        assert_eq!(store.load("run-1").await.unwrap().unwrap().snapshot, run);
        assert_eq!(
            store.name(),
            format!("postgres:{}/{}", where_(&url), database.name)
        );
    }
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agentry_store_migrations")
        .fetch_one(stores[0].pool())
        .await
        .unwrap();
    assert_eq!(applied, 5, "the schema's five migrations, applied once");
}

#[tokio::test]
async fn an_unreadable_snapshot_is_a_backend_error_naming_the_run() {
    let Some(database) = TestDatabase::create().await else {
        return;
    };
    let store = PostgresStore::connect(&database.url()).await.unwrap();
    save(&store, &snapshot("run-1"), 0, &[]).await.unwrap();
    sqlx::query("UPDATE runs SET snapshot = '[1, 2, 3]' WHERE run_id = 'run-1'")
        .execute(store.pool())
        .await
        .unwrap();
    match store.load("run-1").await {
        Err(StoreError::Backend {
            store: name,
            message,
        }) => {
            assert_eq!(name, store.name());
            assert!(message.contains("run `run-1`"), "{message}");
            assert!(message.contains("unreadable"), "{message}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_that_says_what_to_check() {
    // Nothing listens on port 1; the test needs no server.
    let err = PostgresStore::connect("postgres://agentry:hunter2@127.0.0.1:1/runs")
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert!(message.contains("postgres:127.0.0.1:1/runs"), "{message}");
    assert!(message.contains("server is running"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn an_invalid_url_is_an_error_that_does_not_echo_it() {
    let err = PostgresStore::connect("mysql://agentry:hunter2@db/runs")
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("connection URL"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}
