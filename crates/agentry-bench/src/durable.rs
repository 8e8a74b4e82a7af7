//! W5's stores: where the durable workload checkpoints its runs.

use agentry::Runtime;
use agentry_store::{PostgresStore, SqliteStore};
use std::path::PathBuf;

/// The store a durable workload checkpoints to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StoreKind {
    /// A fresh SQLite file in a temporary directory.
    Sqlite,
    /// The PostgreSQL database at `$AGENTRY_TEST_POSTGRES_URL`.
    Postgres,
}

/// Removes a sample's SQLite directory when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// What the SQLite store in the directory holds, in bytes: its messages' JSON, its events'
    /// JSON and its media blobs (what checkpoints wrote, whatever the WAL and free pages).
    pub(crate) fn stored_bytes(&self) -> u64 {
        let conn = rusqlite::Connection::open(self.0.join("runs.db"))
            .expect("opening the bench's SQLite store to measure it");
        conn.query_row(
            "SELECT (SELECT COALESCE(SUM(LENGTH(body)), 0) FROM run_messages) \
                  + (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM run_events) \
                  + (SELECT COALESCE(SUM(LENGTH(bytes)), 0) FROM blobs)",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n as u64)
        .expect("measuring the bench's SQLite store")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl StoreKind {
    /// A runtime on a new store of this kind, and whatever must live as long as it.
    pub(crate) async fn runtime(self) -> (Runtime, Option<TempDir>) {
        match self {
            StoreKind::Sqlite => {
                let dir = std::env::temp_dir().join(format!(
                    "agentry-bench-{}-{}",
                    std::process::id(),
                    uuid_like()
                ));
                let store = SqliteStore::open(dir.join("runs.db"))
                    .await
                    .expect("opening the bench's SQLite store");
                (Runtime::new().store(store), Some(TempDir(dir)))
            }
            StoreKind::Postgres => {
                let url = std::env::var("AGENTRY_TEST_POSTGRES_URL").expect(
                    "the postgres store needs AGENTRY_TEST_POSTGRES_URL, e.g. \
                     postgres://postgres@127.0.0.1:5432/postgres",
                );
                let store = PostgresStore::connect(&url)
                    .await
                    .expect("connecting to the bench's Postgres store");
                (Runtime::new().store(store), None)
            }
        }
    }
}

/// A name no other sample of this process shares.
fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
