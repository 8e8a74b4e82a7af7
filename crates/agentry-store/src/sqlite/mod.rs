//! [`SqliteStore`]: runs in a SQLite file, shared by the processes that open it.

mod checkpointer;
mod options;
mod reads;
mod worker;

use crate::rows::{self, SaveRow};
use crate::{error, migrations};
use agentry_core::store::now_ms;
use agentry_core::{
    Checkpoint, QueuedSave, Renewal, RunQuery, RunStatus, RunStore, RunSummary, StoreError,
    StoredEvent, StoredRun,
};
use checkpointer::Checkpointer;
use futures::future::BoxFuture;
pub use options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use sqlx::migrate::MigrateError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use worker::{SaveJob, Verdict, Worker};

/// How many times opening a file is tried when SQLite reports a failure that another process
/// opening the same new file at the same moment can cause (see `OpenError::may_pass`).
const OPEN_ATTEMPTS: u32 = 3;

/// A [`RunStore`] in a SQLite file.
///
/// The file is created on first use, with its schema; several processes may open it at once
/// (it runs in WAL mode with `synchronous = NORMAL`: a commit survives a crash of the process,
/// and of the machine but for the last commits before a power loss; a write waits up to 5 s for
/// another process's to finish). A checkpoint appends only what its step added (messages and
/// events). Each store has one connection for its writes, which commits the checkpoints that
/// wait together in one transaction, so thousands of concurrent runs share commits: a caller
/// waiting for its checkpoint commits them on its own thread when the connection is free, and
/// the store's thread does it otherwise (and does the other operations); a caller never waits
/// on its own thread for another process's write. Clones share the connection, the thread and
/// the connection pool.
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
    worker: Worker,
}

impl SqliteStore {
    /// Opens the store in the file at `path`, creating the file (and missing parent directories)
    /// on first use and bringing its schema up to date.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::options(path).open().await
    }

    /// The options of a store in the file at `path`, to set before [opening](SqliteOptions::open)
    /// it.
    pub fn options(path: impl AsRef<Path>) -> SqliteOptions {
        SqliteOptions {
            path: path.as_ref().to_path_buf(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }

    /// Opens the store as `opts` say.
    pub(super) async fn open_with(opts: &SqliteOptions) -> Result<SqliteStore, StoreError> {
        let path = opts.path.as_path();
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
            .busy_timeout(opts.busy_timeout);
        let mut attempt = 1;
        let pool = loop {
            match Self::migrated(options.clone(), SqlitePoolOptions::new()).await {
                Err(err) if attempt < OPEN_ATTEMPTS && err.may_pass() => {
                    // Another process is opening the new file too: its transaction ends soon,
                    // and the next attempt finds the file set up.
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                    attempt += 1;
                }
                Err(_) if on_read_only_disk(path) => {
                    return Err(StoreError::backend(
                        &name,
                        "the file system holding the database file is read-only; put the store \
                         on a writable disk (another path), or remount that one read-write",
                    ));
                }
                result => break result.map_err(|e| e.into_store_error(&name))?,
            }
        };
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|e| error::sqlite(&name, "opening the database", e))?;
        let checkpointer = Checkpointer::start(path, name.as_str().into())?;
        Self::start(pool, conn, name, Some(checkpointer), opts.busy_timeout)
    }

    /// A store in memory, empty, for tests: it lives as long as the store and its clones.
    pub async fn in_memory() -> Result<SqliteStore, StoreError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // A database of its own in shared-cache mode, so the store's thread and the pool reach
        // the same one; it lives while a connection to it is open.
        let file = format!(
            "file:agentry-memory-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let name = "sqlite::memory:";
        let options = SqliteConnectOptions::new()
            .filename(&file)
            .in_memory(true)
            .shared_cache(true);
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None);
        let pool = Self::migrated(options, pool)
            .await
            .map_err(|e| e.into_store_error(name))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_MEMORY
            | OpenFlags::SQLITE_OPEN_SHARED_CACHE;
        let conn = Connection::open_with_flags(&file, flags)
            .map_err(|e| error::sqlite(name, "opening the database", e))?;
        Self::start(pool, conn, name.to_string(), None, DEFAULT_BUSY_TIMEOUT)
    }

    /// The connection pool, for queries of your own (the tables are `runs`, and `run_messages`
    /// and `run_events`, whose `run_no` is the run's `position` in `runs`, and `blobs`, the
    /// messages' media bytes by SHA-256).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A pool on the database, its schema brought up to date.
    async fn migrated(
        options: SqliteConnectOptions,
        pool: SqlitePoolOptions,
    ) -> Result<SqlitePool, OpenError> {
        let pool = pool
            .connect_with(options)
            .await
            .map_err(OpenError::Connect)?;
        migrations::sqlite()
            .run(&pool)
            .await
            .map_err(OpenError::Migrate)?;
        Ok(pool)
    }

    /// The store, with its thread on `conn` (and `checkpointer`, for a database in a file), whose
    /// writes wait `busy_timeout` for other processes'.
    fn start(
        pool: SqlitePool,
        conn: Connection,
        name: String,
        checkpointer: Option<Checkpointer>,
        busy_timeout: Duration,
    ) -> Result<SqliteStore, StoreError> {
        // Per connection: wait for other processes' writes, enforce the log's references,
        // commit to the WAL without waiting for the disk (it syncs at checkpoints), keep up to
        // 64 MiB of the database's pages in memory (the runs under way touch pages all over the
        // log), and leave checkpoints to the checkpointer's thread unless the log passes 64 MiB.
        conn.busy_timeout(busy_timeout)
            .and_then(|()| {
                conn.execute_batch(
                    "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; \
                     PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 16384;",
                )
            })
            .map_err(|e| error::sqlite(&name, "setting the database up", e))?;
        let name: Arc<str> = name.into();
        Ok(SqliteStore {
            worker: Worker::start(conn, name.clone(), checkpointer, busy_timeout)?,
            pool,
            name,
        })
    }

    /// Queues a checkpoint for the store's connection; returns its outcome.
    fn queue_checkpoint(
        &self,
        checkpoint: &Checkpoint<'_>,
        more_soon: bool,
    ) -> Result<QueuedSave, StoreError> {
        let row = SaveRow::of(checkpoint);
        let run_id = row.id;
        let job = SaveJob {
            more_soon,
            run_id: run_id.to_string(),
            agent: row.agent.to_string(),
            session_id: row.session.map(str::to_string),
            parent_run_id: row.parent.map(str::to_string),
            status: row.status,
            step: row.step,
            lease: row.lease,
            revision: row.revision,
            hold_ms: row.hold,
            record: rows::json_text(&self.name, run_id, &row.record)?,
            first: row.first,
            messages: row
                .messages
                .iter()
                .map(|m| rows::json_text(&self.name, run_id, m))
                .collect::<Result<_, _>>()?,
            blobs: row
                .blobs
                .iter()
                .filter_map(|b| Some((b.digest().to_string(), b.bytes()?.clone())))
                .collect(),
            events: row
                .events
                .iter()
                .map(|e| {
                    Ok((
                        e.at_ms,
                        e.kind.clone(),
                        rows::json_text(&self.name, run_id, &e.data)?,
                    ))
                })
                .collect::<Result<_, StoreError>>()?,
        };
        let written = self.worker.queue(job)?;
        let (name, run_id) = (self.name.clone(), run_id.to_string());
        let (lease, revision) = (checkpoint.lease, checkpoint.revision);
        Ok(Box::pin(async move {
            match written.await? {
                Verdict::Written => Ok(()),
                Verdict::Refused(found) => {
                    Err(rows::save_refused(&name, &run_id, lease, revision, found))
                }
            }
        }))
    }

    async fn claim_run(
        &self,
        run_id: &str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> Result<u64, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        let (claimed, found, now) = self
            .worker
            .call(move |conn| {
                let failed = |e| error::sqlite(&name, format_args!("claiming run `{id}`"), e);
                let now = now_ms();
                let claimed: Option<i64> = conn
                    .prepare_cached(
                        "UPDATE runs SET lease = lease + 1, lease_expires_ms = ?4 + ?5, \
                         cancel_requested_ms = NULL \
                         WHERE run_id = ?1 AND lease = ?2 AND status = ?3 \
                         AND lease_expires_ms <= ?4 RETURNING lease",
                    )
                    .and_then(|mut q| {
                        q.query_row(
                            params![
                                id,
                                rows::count_param(lease),
                                status.as_str(),
                                now,
                                rows::millis(hold)
                            ],
                            |r| r.get(0),
                        )
                        .optional()
                    })
                    .map_err(failed)?;
                if claimed.is_some() {
                    return Ok((claimed, None, now));
                }
                let found: Option<(i64, String, i64)> = conn
                    .prepare_cached(
                        "SELECT lease, status, lease_expires_ms FROM runs WHERE run_id = ?1",
                    )
                    .and_then(|mut q| {
                        q.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                            .optional()
                    })
                    .map_err(failed)?;
                Ok((None, found, now))
            })
            .await?;
        match claimed {
            Some(new) => rows::lease(&self.name, run_id, new),
            None => Err(rows::claim_refused(
                &self.name, run_id, lease, status, now, found,
            )),
        }
    }

    async fn renew_lease(
        &self,
        run_id: &str,
        lease: u64,
        hold: Duration,
    ) -> Result<Renewal, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        // Renewed and whether a cancel is requested, or what the run's row holds.
        let (renewed, found) = self
            .worker
            .call(move |conn| {
                let failed =
                    |e| error::sqlite(&name, format_args!("renewing the lease of run `{id}`"), e);
                // A released lease (expiry 0) stays released.
                let renewed: Option<bool> = conn
                    .prepare_cached(
                        "UPDATE runs SET lease_expires_ms = ?3 + ?4 \
                         WHERE run_id = ?1 AND lease = ?2 AND lease_expires_ms <> 0 \
                         RETURNING cancel_requested_ms IS NOT NULL",
                    )
                    .and_then(|mut q| {
                        q.query_row(
                            params![id, rows::count_param(lease), now_ms(), rows::millis(hold)],
                            |row| row.get(0),
                        )
                        .optional()
                    })
                    .map_err(failed)?;
                if renewed.is_some() {
                    return Ok((renewed, None));
                }
                let found: Option<(i64, i64)> = conn
                    .prepare_cached("SELECT lease, lease_expires_ms FROM runs WHERE run_id = ?1")
                    .and_then(|mut q| {
                        q.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))
                            .optional()
                    })
                    .map_err(failed)?;
                Ok((None, found))
            })
            .await?;
        match renewed {
            Some(cancel_requested) => Ok(Renewal::new(cancel_requested)),
            None => rows::renewal_refused(&self.name, run_id, lease, found),
        }
    }

    async fn set_cancel_request(&self, run_id: &str) -> Result<(), StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        let updated = self
            .worker
            .call(move |conn| {
                conn.prepare_cached("UPDATE runs SET cancel_requested_ms = ?2 WHERE run_id = ?1")
                    .and_then(|mut q| q.execute(params![id, now_ms()]))
                    .map_err(|e| {
                        error::sqlite(&name, format_args!("asking to cancel run `{id}`"), e)
                    })
            })
            .await?;
        match updated {
            0 => Err(StoreError::NotFound {
                store: self.name.to_string(),
                run_id: run_id.to_string(),
            }),
            _ => Ok(()),
        }
    }

    async fn has_cancel_request(&self, run_id: &str, lease: u64) -> Result<bool, StoreError> {
        let (name, id) = (self.name.clone(), run_id.to_string());
        self.worker
            .call(move |conn| {
                conn.prepare_cached(
                    "SELECT 1 FROM runs WHERE run_id = ?1 AND lease = ?2 \
                     AND cancel_requested_ms IS NOT NULL",
                )
                .and_then(|mut q| q.exists(params![id, rows::count_param(lease)]))
                .map_err(|e| {
                    error::sqlite(
                        &name,
                        format_args!("reading run `{id}`'s cancel request"),
                        e,
                    )
                })
            })
            .await
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
        let outcome = self.queue_checkpoint(&checkpoint, false);
        Box::pin(async move { outcome?.await })
    }

    fn save_queued<'a>(
        &'a self,
        checkpoint: Checkpoint<'a>,
        more_soon: bool,
    ) -> BoxFuture<'a, Result<QueuedSave, StoreError>> {
        Box::pin(std::future::ready(
            self.queue_checkpoint(&checkpoint, more_soon),
        ))
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
    ) -> BoxFuture<'a, Result<Renewal, StoreError>> {
        Box::pin(self.renew_lease(run_id, lease, hold))
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.set_cancel_request(run_id))
    }

    fn cancel_requested<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.has_cancel_request(run_id, lease))
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
        Box::pin(self.run_events(run_id, 0, None))
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(self.run_events(run_id, after, None))
    }

    fn events_page<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(self.run_events(run_id, after, Some(limit)))
    }

    fn last_event_seq<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.last_seq(run_id))
    }
    fn blob<'a>(
        &'a self,
        digest: agentry_core::content::BlobDigest,
    ) -> BoxFuture<'a, Result<Option<agentry_core::content::Blob>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .read_blobs(vec![digest.to_string()])
                .await?
                .into_iter()
                .next())
        })
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Whether `path` (or, when there is no such file, its directory) is on a read-only file system:
/// asked only once opening it failed, so the error can say so.
fn on_read_only_disk(path: &std::path::Path) -> bool {
    let opened = if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
    } else {
        // The file would have been made by the open that failed: making it here changes nothing.
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path);
        made.map(|_| {
            let _ = std::fs::remove_file(path);
        })
    };
    matches!(opened, Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem)
}
