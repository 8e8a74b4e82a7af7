//! [`PostgresStore`]: runs in a PostgreSQL database, shared by every process that connects to it.

use crate::rows::{self, RunRow};
use crate::{error, migrations};
use agentry_core::{
    Checkpoint, RunQuery, RunStatus, RunStore, RunSummary, StoreError, StoredEvent, StoredRun,
};
use futures::future::BoxFuture;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// How long an operation waits for a free connection (or to open one) before it fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

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
        let mut conn = tokio::time::timeout(ACQUIRE_TIMEOUT, PgConnection::connect_with(&options))
            .await
            .unwrap_or_else(|_| {
                let why = format!("no answer within {} s", ACQUIRE_TIMEOUT.as_secs());
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
        let pool = PgPoolOptions::new()
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
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

    /// The connection pool, for queries of your own (the tables are `runs` and `run_events`).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn save_checkpoint(&self, checkpoint: Checkpoint<'_>) -> Result<(), StoreError> {
        let row = RunRow::of(&self.name, checkpoint.snapshot)?;
        let run_id = row.run_id;
        let lease = rows::lease_param(checkpoint.lease);
        let failed = |e| error::backend(&self.name, format_args!("saving run `{run_id}`"), e);

        let mut tx = self.pool.begin().await.map_err(failed)?;
        // Most checkpoints update their run; a run saved for the first time (under lease 0 only)
        // is inserted. An insert that finds the run there after all (another process inserted
        // it meanwhile: the insert waits for that one's commit) leaves the verdict to the update,
        // which then sees it: a run under another lease is a conflict.
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
            // All the events in one statement, numbered after the run's last.
            let (at, (kinds, data)): (Vec<i64>, (Vec<&str>, Vec<String>)) = checkpoint
                .events
                .iter()
                .map(|e| (e.at_ms, (e.kind.as_str(), e.data.to_string())))
                .unzip();
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, at_ms, kind, data) \
                 SELECT $1, last.seq + e.ord, e.at_ms, e.kind, e.data::json \
                 FROM (SELECT COALESCE(MAX(seq), 0) AS seq FROM run_events WHERE run_id = $1) \
                 AS last, \
                 UNNEST($2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY \
                 AS e(at_ms, kind, data, ord)",
            )
            .bind(run_id)
            .bind(at)
            .bind(kinds)
            .bind(data)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        }
        tx.commit().await.map_err(failed)
    }

    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT snapshot::text, lease FROM runs WHERE run_id = $1")
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
        // Of two concurrent claims, the second waits for the first's row lock, then finds the
        // lease moved on and updates nothing.
        let claimed: Option<i64> = sqlx::query_scalar(
            "UPDATE runs SET lease = lease + 1 WHERE run_id = $1 AND lease = $2 AND status = $3 \
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
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM runs WHERE run_id = $1")
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
            "SELECT seq, at_ms, kind, data::text FROM run_events WHERE run_id = $1 ORDER BY seq",
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

/// Writes `row` into its run's row when the run's lease is `lease`; true when it did. The row
/// stays locked until the transaction ends: concurrent saves of a run take turns, so each
/// numbers its events after the previous one's.
async fn update_run(
    conn: &mut PgConnection,
    row: &RunRow<'_>,
    lease: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE runs SET agent = $2, session_id = $3, parent_run_id = $4, status = $5, \
         step = $6, updated_ms = $7, snapshot = $8::json \
         WHERE run_id = $1 AND lease = $9",
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

/// Inserts `row` as a new run with lease 0; true when it did, false when the run exists.
async fn insert_run(conn: &mut PgConnection, row: &RunRow<'_>) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO runs (run_id, agent, session_id, parent_run_id, status, step, lease, \
         created_ms, updated_ms, snapshot) \
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $7, $8::json) \
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
