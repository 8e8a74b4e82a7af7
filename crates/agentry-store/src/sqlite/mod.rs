//! [`SqliteStore`]: runs in a SQLite file, shared by the processes that open it.

mod writer;

use crate::rows::{self, SaveRow};
use crate::{error, migrations};
use agentry_core::store::now_ms;
use agentry_core::{
    Checkpoint, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent, StoredRun,
};
use futures::future::BoxFuture;
use sqlx::migrate::MigrateError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use writer::Writer;

/// How long a write waits for another connection's (or process's) write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times opening a file is tried when SQLite reports a failure that another process
/// opening the same new file at the same moment can cause (see `OpenError::may_pass`).
const OPEN_ATTEMPTS: u32 = 3;

/// A [`RunStore`] in a SQLite file.
///
/// The file is created on first use, with its schema; several processes may open it at once
/// (it runs in WAL mode with `synchronous = NORMAL`: a commit survives a crash of the process,
/// and of the machine but for the last commits before a power loss; a write waits up to 5 s for
/// another process's to finish). A checkpoint appends only what its step added (messages and
/// events), and one writer task per store commits the checkpoints that arrive together in one
/// transaction, so thousands of concurrent runs share commits. Clones share the connection pool
/// and the writer. The store must be opened inside the tokio runtime that uses it (its writer
/// runs there).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry_core::StoreError> {
/// use agentry_core::{RunQuery, RunStore};
/// use agentry_store::SqliteStore;
///
/// let store = SqliteStore::in_memory().await?;
/// assert_eq!(store.name(), "sqlite::memory:");
/// assert!(store.list(&RunQuery::all()).await?.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    name: Arc<str>,
    writer: Writer,
}

impl SqliteStore {
    /// Opens the store in the file at `path`, creating the file (and missing parent directories)
    /// on first use and bringing its schema up to date.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let name = format!("sqlite:{}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::backend(
                    &name,
                    format!(
                        "cannot create the directory `{}` for the database file ({e}); check \
                         the path and the permissions of its parent directories",
                        dir.display()
                    ),
                )
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT);
        let mut attempt = 1;
        loop {
            match Self::connect(options.clone(), SqlitePoolOptions::new(), &name).await {
                Err(err) if attempt < OPEN_ATTEMPTS && err.may_pass() => {
                    // Another process is opening the new file too: its transaction ends soon,
                    // and the next attempt finds the file set up.
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                    attempt += 1;
                }
                result => return result.map_err(|e| e.into_store_error(&name)),
            }
        }
    }

    /// A store in memory, empty, for tests: it lives as long as the store and its clones.
    pub async fn in_memory() -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::new().in_memory(true);
        // One connection, never closed: each connection to `:memory:` is a database of its own,
        // gone when the connection closes.
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None);
        let name = "sqlite::memory:";
        Self::connect(options, pool, name)
            .await
            .map_err(|e| e.into_store_error(name))
    }

    /// The connection pool, for queries of your own (the tables are `runs`, `run_messages` and
    /// `run_events`).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn connect(
        options: SqliteConnectOptions,
        pool: SqlitePoolOptions,
        name: &str,
    ) -> Result<SqliteStore, OpenError> {
        let pool = pool
            .connect_with(options)
            .await
            .map_err(OpenError::Connect)?;
        migrations::sqlite()
            .run(&pool)
            .await
            .map_err(OpenError::Migrate)?;
        let name: Arc<str> = name.into();
        Ok(SqliteStore {
            writer: Writer::start(pool.clone(), name.clone()),
            pool,
            name,
        })
    }

    async fn save_checkpoint(&self, checkpoint: Checkpoint<'_>) -> Result<(), StoreError> {
        let row = SaveRow::of(&checkpoint);
        let json = rows::json_text(&self.name, row.id, &row)?;
        if self.writer.save(&self.name, row.id, json).await? {
            Ok(())
        } else {
            Err(rows::conflict(&self.name, row.id, checkpoint.lease))
        }
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let failed = |e| error::backend(&self.name, format_args!("loading run `{run_id}`"), e);
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT snapshot, lease FROM runs WHERE run_id = ?1")
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(failed)?;
        let Some((record, lease)) = row else {
            return Ok(None);
        };
        // Read after the record: the log only grows, so it holds every message the record names.
        let messages = async || {
            sqlx::query_as("SELECT pos, body FROM run_messages WHERE run_id = ?1")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)
        };
        rows::stored_run(&self.name, run_id, &record, lease, messages)
            .await
            .map(Some)
    }

    async fn claim_run(
        &self,
        run_id: &str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> Result<u64, StoreError> {
        let failed = |e| error::backend(&self.name, format_args!("claiming run `{run_id}`"), e);
        let now = now_ms();
        let claimed: Option<i64> = sqlx::query_scalar(
            "UPDATE runs SET lease = lease + 1, lease_expires_ms = ?4 + ?5 \
             WHERE run_id = ?1 AND lease = ?2 AND status = ?3 AND lease_expires_ms <= ?4 \
             RETURNING lease",
        )
        .bind(run_id)
        .bind(rows::lease_param(lease))
        .bind(status.as_str())
        .bind(now)
        .bind(rows::millis(hold))
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        if let Some(new) = claimed {
            return rows::lease(&self.name, run_id, new);
        }
        let found: Option<(i64, String, i64)> =
            sqlx::query_as("SELECT lease, status, lease_expires_ms FROM runs WHERE run_id = ?1")
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(failed)?;
        Err(rows::claim_refused(
            &self.name, run_id, lease, status, now, found,
        ))
    }

    async fn renew_lease(
        &self,
        run_id: &str,
        lease: u64,
        hold: Duration,
    ) -> Result<(), StoreError> {
        let failed = |e| {
            error::backend(
                &self.name,
                format_args!("renewing the lease of run `{run_id}`"),
                e,
            )
        };
        let done = sqlx::query(
            "UPDATE runs SET lease_expires_ms = ?3 + ?4 WHERE run_id = ?1 AND lease = ?2",
        )
        .bind(run_id)
        .bind(rows::lease_param(lease))
        .bind(now_ms())
        .bind(rows::millis(hold))
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM runs WHERE run_id = ?1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed)?;
        Err(match exists {
            Some(_) => rows::conflict(&self.name, run_id, lease),
            None => StoreError::NotFound {
                store: self.name.to_string(),
                run_id: run_id.to_string(),
            },
        })
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = rows::list_query(query);
        let found: Vec<rows::SummaryColumns> = sql
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(|e| error::backend(&self.name, "listing runs", e))?;
        found
            .into_iter()
            .map(|columns| rows::summary(&self.name, columns))
            .collect()
    }

    async fn run_events(&self, run_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let found: Vec<rows::EventColumns> = sqlx::query_as(
            "SELECT seq, at_ms, kind, data FROM run_events WHERE run_id = ?1 ORDER BY seq",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| {
            error::backend(
                &self.name,
                format_args!("reading the events of run `{run_id}`"),
                e,
            )
        })?;
        found
            .into_iter()
            .map(|columns| rows::event(&self.name, run_id, columns))
            .collect()
    }
}

/// Why an attempt to open a store failed.
enum OpenError {
    /// Connecting (and setting the connection up) failed.
    Connect(sqlx::Error),
    /// Bringing the schema up to date failed.
    Migrate(MigrateError),
}

impl OpenError {
    /// True when SQLite itself reported the failure, which another process opening the same
    /// file at the same moment can cause: switching a new file to WAL mode cannot wait for its
    /// lock, and two processes may both find the schema missing and both create it.
    fn may_pass(&self) -> bool {
        matches!(
            self,
            OpenError::Connect(sqlx::Error::Database(_))
                | OpenError::Migrate(
                    MigrateError::Execute(sqlx::Error::Database(_))
                        | MigrateError::ExecuteMigration(sqlx::Error::Database(_), _)
                )
        )
    }

    fn into_store_error(self, name: &str) -> StoreError {
        match self {
            OpenError::Connect(e) => error::backend(name, "opening the database", e),
            OpenError::Migrate(e) => error::migration(name, e),
        }
    }
}

impl RunStore for SqliteStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.save_checkpoint(checkpoint))
    }

    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>> {
        Box::pin(self.load_run(run_id))
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.claim_run(run_id, lease, status, hold))
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.renew_lease(run_id, lease, hold))
    }

    fn list<'a>(
        &'a self,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>> {
        Box::pin(self.list_runs(query))
    }

    fn events<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(self.run_events(run_id))
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
