//! [`SqliteStore`]: runs in a SQLite file, shared by the processes that open it.

use crate::rows::{self, RunRow};
use crate::{error, migrations};
use agentry_core::{
    Checkpoint, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent, StoredRun,
};
use futures::future::BoxFuture;
use sqlx::migrate::MigrateError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for another connection's (or process's) write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times opening a file is tried when SQLite reports a failure that another process
/// opening the same new file at the same moment can cause (see `OpenError::may_pass`).
const OPEN_ATTEMPTS: u32 = 3;

/// A [`RunStore`] in a SQLite file.
///
/// The file is created on first use, with its schema; several processes may open it at once
/// (it runs in WAL mode, and a write waits up to 5 s for another to finish). Clones share the
/// connection pool.
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

    /// The connection pool, for queries of your own (the tables are `runs` and `run_events`).
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
        Ok(SqliteStore {
            pool,
            name: name.into(),
        })
    }

    async fn save_checkpoint(&self, checkpoint: Checkpoint<'_>) -> Result<(), StoreError> {
        let row = RunRow::of(&self.name, checkpoint.snapshot)?;
        let run_id = row.run_id;
        let lease = rows::lease_param(checkpoint.lease);
        let failed = |e| error::backend(&self.name, format_args!("saving run `{run_id}`"), e);

        // IMMEDIATE: take the write lock first (waiting up to the busy timeout), so the reads
        // below see the last committed state and no other writer can slip in before the commit.
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed)?;
        // Most checkpoints update their run; a run saved for the first time (under lease 0 only)
        // is inserted. An insert that finds the run there after all leaves the verdict to the
        // update: a run under another lease is a conflict.
        let mut written = update_run(&mut tx, &row, lease).await.map_err(failed)?;
        if !written && checkpoint.lease == 0 {
            written = insert_run(&mut tx, &row).await.map_err(failed)?
                || update_run(&mut tx, &row, lease).await.map_err(failed)?;
        }
        if !written {
            tx.rollback().await.map_err(failed)?;
            return Err(rows::conflict(&self.name, run_id, checkpoint.lease));
        }
        if !checkpoint.events.is_empty() {
            let last: i64 = sqlx::query_scalar(
                "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?1",
            )
            .bind(run_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed)?;
            for (seq, event) in (last + 1..).zip(checkpoint.events) {
                sqlx::query(
                    "INSERT INTO run_events (run_id, seq, at_ms, kind, data) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .bind(run_id)
                .bind(seq)
                .bind(event.at_ms)
                .bind(&event.kind)
                .bind(event.data.to_string())
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
            }
        }
        tx.commit().await.map_err(failed)
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT snapshot, lease FROM runs WHERE run_id = ?1")
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| {
                    error::backend(&self.name, format_args!("loading run `{run_id}`"), e)
                })?;
        let Some((json, lease)) = row else {
            return Ok(None);
        };
        Ok(Some(StoredRun {
            snapshot: rows::snapshot(&self.name, run_id, &json)?,
            lease: rows::lease(&self.name, run_id, lease)?,
        }))
    }

    async fn claim_run(
        &self,
        run_id: &str,
        lease: u64,
        status: RunStatus,
    ) -> Result<u64, StoreError> {
        let failed = |e| error::backend(&self.name, format_args!("claiming run `{run_id}`"), e);
        let claimed: Option<i64> = sqlx::query_scalar(
            "UPDATE runs SET lease = lease + 1 WHERE run_id = ?1 AND lease = ?2 AND status = ?3 \
             RETURNING lease",
        )
        .bind(run_id)
        .bind(rows::lease_param(lease))
        .bind(status.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        if let Some(new) = claimed {
            return rows::lease(&self.name, run_id, new);
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

/// Writes `row` into its run's row when the run's lease is `lease`; true when it did.
async fn update_run(
    conn: &mut SqliteConnection,
    row: &RunRow<'_>,
    lease: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE runs SET agent = ?2, session_id = ?3, parent_run_id = ?4, status = ?5, \
         step = ?6, updated_ms = ?7, snapshot = ?8 \
         WHERE run_id = ?1 AND lease = ?9",
    )
    .bind(row.run_id)
    .bind(row.agent)
    .bind(row.session_id)
    .bind(row.parent_run_id)
    .bind(row.status)
    .bind(row.step)
    .bind(row.now_ms)
    .bind(&row.snapshot)
    .bind(lease)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Inserts `row` as a new run, last in the order of first saves, with lease 0; true when it
/// did, false when the run exists.
async fn insert_run(conn: &mut SqliteConnection, row: &RunRow<'_>) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO runs (run_id, position, agent, session_id, parent_run_id, status, step, \
         lease, created_ms, updated_ms, snapshot) \
         VALUES (?1, (SELECT COALESCE(MAX(position), 0) + 1 FROM runs), ?2, ?3, ?4, ?5, ?6, \
         0, ?7, ?7, ?8) \
         ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(row.run_id)
    .bind(row.agent)
    .bind(row.session_id)
    .bind(row.parent_run_id)
    .bind(row.status)
    .bind(row.step)
    .bind(row.now_ms)
    .bind(&row.snapshot)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
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
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.claim_run(run_id, lease, status))
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
