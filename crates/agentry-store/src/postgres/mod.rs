//! [`PostgresStore`]: runs in a PostgreSQL database, shared by every process that connects to it.

use crate::rows::{self, SaveRow};
use crate::{error, migrations};
use agentry_core::store::now_ms;
use agentry_core::{
    Checkpoint, Renewal, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent,
    StoredRun,
};
use futures::future::BoxFuture;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

/// The server's time in ms since the Unix epoch: leases expire by one clock, whichever host the
/// processes that share the store run on.
macro_rules! now_ms_sql {
    () => {
        "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    };
}

/// A checkpoint in one statement (so one round trip, in one transaction): the run's row when its
/// lease is the checkpoint's (`$9`) and it is at the revision the checkpoint follows (`$15`,
/// moved on by one), then its appended messages (`$11` the first position, `$12`
/// a JSON array) and events (`$13` how many, `$14` a JSON array), numbered after the run's last.
/// The row stays locked until the statement ends: concurrent saves of a run take turns, so each
/// numbers its events after the previous one's. No row back: the lease was not `$9`, or the
/// revision not `$15`.
const SAVE: &str = concat!(
    "WITH run AS (\
       UPDATE runs SET agent = $2, session_id = $3, parent_run_id = $4, status = $5, step = $6, \
         updated_ms = $7, snapshot = $8::json, \
         lease_expires_ms = COALESCE(",
    now_ms_sql!(),
    " + $10::bigint, 0), events = events + $13, revision = $15 + 1 \
       WHERE run_id = $1 AND lease = $9 AND revision = $15 RETURNING events), \
     added_messages AS (\
       INSERT INTO run_messages (run_id, pos, body) \
       SELECT $1, $11 + m.ord - 1, m.body \
       FROM run, json_array_elements($12::json) WITH ORDINALITY AS m(body, ord)), \
     added_events AS (\
       INSERT INTO run_events (run_id, seq, at_ms, kind, data) \
       SELECT $1, run.events - $13 + e.ord, (e.value ->> 'at_ms')::bigint, e.value ->> 'kind', \
         e.value -> 'data' \
       FROM run, json_array_elements($14::json) WITH ORDINALITY AS e(value, ord)) \
     SELECT events FROM run"
);
mod options;

pub use options::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_LOCK_TIMEOUT, PostgresOptions};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// A [`RunStore`] in a PostgreSQL database.
///
/// Connecting brings the database's schema up to date; several processes may connect at once
/// (the migrations run under an advisory lock). Connections are plain, without TLS: use a server
/// on the same host or a trusted network. Clones share the connection pool.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry_core::StoreError> {
/// use agentry_core::RunStore;
/// use agentry_store::PostgresStore;
///
/// let store = PostgresStore::connect("postgres://agentry:secret@127.0.0.1:5432/runs").await?;
/// assert_eq!(store.name(), "postgres:127.0.0.1:5432/runs");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    name: Arc<str>,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`) and
    /// brings its schema up to date.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::options(url).connect().await
    }

    /// The options of a store on the database at `url`, to set before
    /// [connecting](PostgresOptions::connect).
    pub fn options(url: &str) -> PostgresOptions {
        PostgresOptions {
            url: url.to_string(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// Connects as `opts` say.
    async fn connect_with(opts: &PostgresOptions) -> Result<PostgresStore, StoreError> {
        let url = opts.url.as_str();
        let scheme = url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
            // The URL is left out of the messages: it may hold a password.
            return Err(StoreError::backend(
                "postgres",
                "reading the connection URL: it does not start with postgres:// or \
                 postgresql://; write it as postgres://user[:password]@host[:port]/database",
            ));
        }
        let options: PgConnectOptions = url
            .parse()
            .map_err(|e| error::backend("postgres", "reading the connection URL", e))?;
        let name = name_of(&options);
        // One connection first: it fails at once when the server cannot be reached (a pool
        // would retry until its timeout), and brings the schema up to date.
        let wait = opts.connect_timeout;
        let mut conn = tokio::time::timeout(wait, PgConnection::connect_with(&options))
            .await
            .unwrap_or_else(|_| {
                let why = format!("no answer within {:?}", wait);
                Err(sqlx::Error::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    why,
                )))
            })
            .map_err(|e| error::backend(&name, "connecting", e))?;
        migrations::postgres()
            .run(&mut conn)
            .await
            .map_err(|e| error::migration(&name, e))?;
        // The store is usable whether or not the server acknowledges the goodbye.
        let _ = conn.close().await;
        // The store's own statements wait for another transaction's lock at most this long, then
        // fail (as a SQLite store's wait for another process's write does).
        let lock_timeout = format!("{}ms", opts.lock_timeout.as_millis().max(1));
        let pool = PgPoolOptions::new()
            .acquire_timeout(opts.connect_timeout)
            .connect_lazy_with(options.options([("lock_timeout", lock_timeout)]));
        Ok(PostgresStore {
            pool,
            name: name.into(),
        })
    }

    /// A store on an existing pool, whose schema it brings up to date.
    pub async fn from_pool(pool: PgPool) -> Result<PostgresStore, StoreError> {
        let name = name_of(&pool.connect_options());
        let mut conn = pool
            .acquire()
            .await
            .map_err(|e| error::backend(&name, "connecting", e))?;
        if let Err(e) = migrations::postgres().run(&mut *conn).await {
            // A failed migration can leave the migrator's advisory lock held by the connection:
            // close it rather than hand it back to the pool, where it would block the next one.
            let _ = conn.detach().close().await;
            return Err(error::migration(&name, e));
        }
        drop(conn);
        Ok(PostgresStore {
            pool,
            name: name.into(),
        })
    }

    /// The connection pool, for queries of your own (the tables are `runs`, `run_messages`,
    /// `run_events`, and `blobs`, the messages' media bytes by SHA-256).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn save_checkpoint(&self, checkpoint: Checkpoint<'_>) -> Result<(), StoreError> {
        let row = SaveRow::of(&checkpoint);
        let run_id = row.id;
        let failed = |e| error::backend(&self.name, format_args!("saving run `{run_id}`"), e);
        let record = rows::json_text(&self.name, run_id, &row.record)?;
        let messages = rows::json_text(&self.name, run_id, &row.messages)?;
        let events = rows::json_text(&self.name, run_id, &row.events)?;
        // The bytes first, once per content: a message never names bytes the store lacks.
        for blob in &row.blobs {
            let Some(bytes) = blob.bytes() else { continue };
            sqlx::query(
                "INSERT INTO blobs (sha256, size, bytes) VALUES ($1, $2, $3) \
                 ON CONFLICT (sha256) DO NOTHING",
            )
            .bind(blob.digest().to_string())
            .bind(bytes.len() as i64)
            .bind(bytes.as_ref())
            .execute(&self.pool)
            .await
            .map_err(failed)?;
        }
        let now = now_ms();
        let save = || {
            sqlx::query_scalar::<_, i64>(SAVE)
                .bind(run_id)
                .bind(row.agent)
                .bind(row.session)
                .bind(row.parent)
                .bind(row.status)
                .bind(row.step)
                .bind(now)
                .bind(&record)
                .bind(row.lease)
                .bind(row.hold)
                .bind(row.first)
                .bind(&messages)
                .bind(row.events.len() as i64)
                .bind(&events)
                .bind(row.revision)
        };
        let mut written = save()
            .fetch_optional(&self.pool)
            .await
            .map_err(failed)?
            .is_some();
        // A run saved for the first time (under lease 0, at revision 0 only) is inserted, then
        // saved, in one transaction: a process that dies between the two leaves no run without
        // a checkpoint. An insert that finds the run there after all (another process inserted
        // it meanwhile) leaves the verdict to the save.
        if !written && checkpoint.lease == 0 && checkpoint.revision == 0 {
            let mut tx = self.pool.begin().await.map_err(failed)?;
            insert_run(&mut tx, &row, now).await.map_err(failed)?;
            written = save()
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?
                .is_some();
            if written {
                tx.commit().await.map_err(failed)?;
            }
        }
        if written {
            return Ok(());
        }
        let found = sqlx::query_as("SELECT lease, revision FROM runs WHERE run_id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed)?;
        Err(rows::save_refused(
            &self.name,
            run_id,
            checkpoint.lease,
            checkpoint.revision,
            found,
        ))
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let failed = |e| error::backend(&self.name, format_args!("loading run `{run_id}`"), e);
        let row: Option<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT snapshot::text, lease, revision, lease_expires_ms FROM runs WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        // A run's row is inserted with an empty record just before its first save writes it: a
        // run caught in between has no checkpoint yet.
        let Some((record, lease, revision, expires)) = row.filter(|(record, ..)| record != "{}")
        else {
            return Ok(None);
        };
        // Read after the record: the log only grows, so it holds every message the record names.
        let messages = async || {
            sqlx::query_as("SELECT pos, body::text FROM run_messages WHERE run_id = $1")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)
        };
        let blobs = async |digests: Vec<String>| self.read_blobs(&digests).await;
        rows::stored_run(
            &self.name,
            run_id,
            &record,
            (lease, revision, expires),
            messages,
            blobs,
        )
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
        // Of two concurrent claims, the second waits for the first's row lock, then finds the
        // lease moved on and updates nothing.
        let claimed: Option<i64> = sqlx::query_scalar(concat!(
            "UPDATE runs SET lease = lease + 1, lease_expires_ms = ",
            now_ms_sql!(),
            " + $4, cancel_requested_ms = NULL \
             WHERE run_id = $1 AND lease = $2 AND status = $3 AND lease_expires_ms <= ",
            now_ms_sql!(),
            " RETURNING lease"
        ))
        .bind(run_id)
        .bind(rows::count_param(lease))
        .bind(status.as_str())
        .bind(rows::millis(hold))
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        if let Some(new) = claimed {
            return rows::lease(&self.name, run_id, new);
        }
        let found: Option<(i64, String, i64, i64)> = sqlx::query_as(concat!(
            "SELECT lease, status, lease_expires_ms, ",
            now_ms_sql!(),
            " FROM runs WHERE run_id = $1"
        ))
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        let now = found.as_ref().map_or(0, |f| f.3);
        Err(rows::claim_refused(
            &self.name,
            run_id,
            lease,
            status,
            now,
            found.map(|(l, s, e, _)| (l, s, e)),
        ))
    }

    async fn renew_lease(
        &self,
        run_id: &str,
        lease: u64,
        hold: Duration,
    ) -> Result<Renewal, StoreError> {
        let failed = |e| {
            error::backend(
                &self.name,
                format_args!("renewing the lease of run `{run_id}`"),
                e,
            )
        };
        // A released lease (expiry 0) stays released.
        let renewed: Option<bool> = sqlx::query_scalar(concat!(
            "UPDATE runs SET lease_expires_ms = ",
            now_ms_sql!(),
            " + $3 WHERE run_id = $1 AND lease = $2 AND lease_expires_ms <> 0 \
             RETURNING cancel_requested_ms IS NOT NULL"
        ))
        .bind(run_id)
        .bind(rows::count_param(lease))
        .bind(rows::millis(hold))
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)?;
        if let Some(cancel_requested) = renewed {
            return Ok(Renewal::new(cancel_requested));
        }
        let found: Option<(i64, i64)> =
            sqlx::query_as("SELECT lease, lease_expires_ms FROM runs WHERE run_id = $1")
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(failed)?;
        rows::renewal_refused(&self.name, run_id, lease, found)
    }

    async fn set_cancel_request(&self, run_id: &str) -> Result<(), StoreError> {
        let done = sqlx::query(concat!(
            "UPDATE runs SET cancel_requested_ms = ",
            now_ms_sql!(),
            " WHERE run_id = $1"
        ))
        .bind(run_id)
        .execute(&self.pool)
        .await
        .map_err(|e| {
            error::backend(
                &self.name,
                format_args!("asking to cancel run `{run_id}`"),
                e,
            )
        })?;
        match done.rows_affected() {
            0 => Err(StoreError::NotFound {
                store: self.name.to_string(),
                run_id: run_id.to_string(),
            }),
            _ => Ok(()),
        }
    }

    async fn has_cancel_request(&self, run_id: &str, lease: u64) -> Result<bool, StoreError> {
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM runs WHERE run_id = $1 AND lease = $2 \
             AND cancel_requested_ms IS NOT NULL",
        )
        .bind(run_id)
        .bind(rows::count_param(lease))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| {
            error::backend(
                &self.name,
                format_args!("reading run `{run_id}`'s cancel request"),
                e,
            )
        })?;
        Ok(found.is_some())
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

    /// The blobs stored under `digests` (hex SHA-256s); a digest the table lacks is left out.
    async fn read_blobs(
        &self,
        digests: &[String],
    ) -> Result<Vec<agentry_core::content::Blob>, StoreError> {
        let found: Vec<(String, Vec<u8>)> =
            sqlx::query_as("SELECT sha256, bytes FROM blobs WHERE sha256 = ANY($1)")
                .bind(digests)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| error::backend(&self.name, "reading media bytes", e))?;
        found
            .into_iter()
            .map(|(sha256, bytes)| rows::blob(&self.name, &sha256, bytes))
            .collect()
    }

    async fn run_events(
        &self,
        run_id: &str,
        after: u64,
        limit: Option<usize>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        // Postgres reads a NULL limit as none.
        let limit = limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let found: Vec<rows::EventColumns> = sqlx::query_as(
            "SELECT seq, at_ms, kind, data::text FROM run_events WHERE run_id = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(run_id)
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(limit)
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

/// Inserts the run of `row` with lease 0 and an empty record (the save that follows writes it),
/// unless the run exists.
async fn insert_run(
    conn: &mut sqlx::PgConnection,
    row: &SaveRow<'_>,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO runs (run_id, agent, session_id, parent_run_id, status, step, lease, \
         created_ms, updated_ms, snapshot) \
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $7, '{}'::json) \
         ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(row.id)
    .bind(row.agent)
    .bind(row.session)
    .bind(row.parent)
    .bind(row.status)
    .bind(row.step)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// The store's name: `postgres:host:port/database`, without the user and password.
fn name_of(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(dir) => dir.display().to_string(),
        None => options.get_host().to_string(),
    };
    let database = options
        .get_database()
        .unwrap_or_else(|| options.get_username());
    format!("postgres:{host}:{}/{database}", options.get_port())
}

impl RunStore for PostgresStore {
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

    fn blob<'a>(
        &'a self,
        digest: agentry_core::content::BlobDigest,
    ) -> BoxFuture<'a, Result<Option<agentry_core::content::Blob>, StoreError>> {
        Box::pin(async move { Ok(self.read_blobs(&[digest.to_string()]).await?.pop()) })
    }
    fn last_event_seq<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let last: i64 = sqlx::query_scalar(
                "SELECT COALESCE(MAX(seq), 0)::BIGINT FROM run_events WHERE run_id = $1",
            )
            .bind(run_id)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| {
                error::backend(
                    &self.name,
                    format_args!("reading the events of run `{run_id}`"),
                    e,
                )
            })?;
            Ok(u64::try_from(last).unwrap_or(0))
        })
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_leaves_out_the_user_and_password() {
        let options: PgConnectOptions = "postgres://agentry:hunter2@db.internal:6543/runs"
            .parse()
            .unwrap();
        assert_eq!(name_of(&options), "postgres:db.internal:6543/runs");
    }
}
