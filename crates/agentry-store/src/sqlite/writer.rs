//! The SQLite store's checkpoint writer: one task per store that writes the checkpoints of every
//! run of the process, batching those that arrive together into one transaction.
//!
//! SQLite has one writer at a time. Connections that each take the write lock in turn wait for
//! one another in SQLite's busy handler, which sleeps for milliseconds; a single writer that
//! commits whatever checkpoints are waiting in one transaction instead makes a commit's cost
//! shared by every run that checkpointed meanwhile. A batch is one multi-statement query over a
//! JSON array of the checkpoints, so its SQL is prepared once whatever the batch's size, and each
//! checkpoint is still conditional on its own run's lease.

use crate::error;
use agentry_core::StoreError;
use agentry_core::store::now_ms;
use sqlx::SqlitePool;
use sqlx::error::ErrorKind;
use std::collections::HashSet;
use tokio::sync::{mpsc, oneshot};

/// At most this many checkpoints are committed together.
const MAX_BATCH: usize = 256;

/// One batch: `?1` is a JSON array of checkpoints (see `rows::SaveRow`), `?2` the time in ms.
/// New runs (lease 0) are inserted first when missing; then each run whose lease is the
/// checkpoint's gets its row, appended messages and events; the others are left as they are
/// and missing from the rows returned.
const SAVE_BATCH: &str = "\
BEGIN IMMEDIATE;
INSERT INTO runs (run_id, position, agent, session_id, parent_run_id, status, step, lease, \
                  created_ms, updated_ms, snapshot) \
    SELECT j.value ->> 'id', (SELECT COALESCE(MAX(position), 0) FROM runs) + j.key + 1, \
           j.value ->> 'agent', j.value ->> 'session', j.value ->> 'parent', \
           j.value ->> 'status', j.value ->> 'step', 0, ?2, ?2, '{}' \
    FROM json_each(?1) AS j WHERE j.value ->> 'lease' = 0 \
    ON CONFLICT (run_id) DO NOTHING;
UPDATE runs SET agent = j.value ->> 'agent', session_id = j.value ->> 'session', \
       parent_run_id = j.value ->> 'parent', status = j.value ->> 'status', \
       step = j.value ->> 'step', updated_ms = ?2, snapshot = j.value -> 'record', \
       lease_expires_ms = COALESCE(?2 + (j.value ->> 'hold'), 0), \
       events = runs.events + json_array_length(j.value -> 'events') \
    FROM json_each(?1) AS j \
    WHERE runs.run_id = j.value ->> 'id' AND runs.lease = j.value ->> 'lease' \
    RETURNING runs.run_id;
INSERT INTO run_messages (run_id, pos, body) \
    SELECT r.run_id, (j.value ->> 'first') + m.key, m.value \
    FROM json_each(?1) AS j \
    JOIN runs AS r ON r.run_id = j.value ->> 'id' AND r.lease = j.value ->> 'lease' \
    JOIN json_each(j.value -> 'messages') AS m;
INSERT INTO run_events (run_id, seq, at_ms, kind, data) \
    SELECT r.run_id, r.events - json_array_length(j.value -> 'events') + e.key + 1, \
           e.value ->> 'at_ms', e.value ->> 'kind', e.value -> 'data' \
    FROM json_each(?1) AS j \
    JOIN runs AS r ON r.run_id = j.value ->> 'id' AND r.lease = j.value ->> 'lease' \
    JOIN json_each(j.value -> 'events') AS e;
COMMIT;";

/// A checkpoint waiting to be written: its run, its JSON object, and where the outcome goes
/// (true when written, false when the run's lease was not the checkpoint's).
struct Job {
    run_id: String,
    json: String,
    done: oneshot::Sender<Result<bool, StoreError>>,
}

/// The handle of a store's writer task; the task ends when every handle is dropped.
#[derive(Clone)]
pub(super) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Writer {
    /// Starts the writer of the store `name` on `pool`, in a task of the current tokio runtime.
    pub(super) fn start(pool: SqlitePool, name: std::sync::Arc<str>) -> Writer {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_batches(pool, name, queue));
        Writer { jobs }
    }

    /// Writes one checkpoint (its `SaveRow` as JSON); true when written, false when its run's
    /// lease was not the checkpoint's (or, for a checkpoint under lease 0, the run exists under
    /// another).
    pub(super) async fn save(
        &self,
        store: &str,
        run_id: &str,
        json: String,
    ) -> Result<bool, StoreError> {
        let (done, outcome) = oneshot::channel();
        let job = Job {
            run_id: run_id.to_string(),
            json,
            done,
        };
        let gone = || {
            StoreError::backend(
                store,
                format!(
                    "saving run `{run_id}`: the store's writer stopped (its tokio runtime shut \
                     down); open the store again in the runtime that uses it"
                ),
            )
        };
        self.jobs.send(job).map_err(|_| gone())?;
        outcome.await.map_err(|_| gone())?
    }
}

/// The writer task: takes the checkpoints waiting, writes them in one transaction, tells each
/// its outcome, and goes on until every handle is dropped.
async fn write_batches(
    pool: SqlitePool,
    name: std::sync::Arc<str>,
    mut queue: mpsc::UnboundedReceiver<Job>,
) {
    let mut batch: Vec<Job> = Vec::new();
    let mut runs: HashSet<String> = HashSet::new();
    let mut held_over: Option<Job> = None;
    loop {
        let first = match held_over.take() {
            Some(job) => job,
            None => match queue.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        runs.clear();
        runs.insert(first.run_id.clone());
        batch.push(first);
        // One checkpoint per run in a batch: the next one of a run waits for the next batch.
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) if runs.insert(job.run_id.clone()) => batch.push(job),
                Ok(job) => {
                    held_over = Some(job);
                    break;
                }
                Err(_) => break,
            }
        }
        match write(&pool, &batch).await {
            Ok(written) => {
                for job in batch.drain(..) {
                    let ok = written.contains(&job.run_id);
                    let _ = job.done.send(Ok(ok));
                }
            }
            // A checkpoint that breaks a constraint must not fail the others: write each alone.
            Err(sqlx::Error::Database(e)) if batch.len() > 1 && e.kind() != ErrorKind::Other => {
                for job in batch.drain(..) {
                    let outcome = write(&pool, std::slice::from_ref(&job))
                        .await
                        .map(|written| written.contains(&job.run_id))
                        .map_err(|e| {
                            error::backend(&name, format_args!("saving run `{}`", job.run_id), e)
                        });
                    let _ = job.done.send(outcome);
                }
            }
            Err(e) => {
                let failed = error::backend(&name, "saving a batch of checkpoints", e);
                for job in batch.drain(..) {
                    let _ = job.done.send(Err(failed.clone()));
                }
            }
        }
    }
}

/// Writes `batch` in one transaction; returns the runs whose checkpoints were written.
async fn write(pool: &SqlitePool, batch: &[Job]) -> Result<HashSet<String>, sqlx::Error> {
    let mut array =
        String::with_capacity(batch.iter().map(|j| j.json.len() + 1).sum::<usize>() + 2);
    array.push('[');
    for (i, job) in batch.iter().enumerate() {
        if i > 0 {
            array.push(',');
        }
        array.push_str(&job.json);
    }
    array.push(']');
    let mut conn = pool.acquire().await?;
    let written: Result<Vec<(String,)>, sqlx::Error> = sqlx::query_as(SAVE_BATCH)
        .bind(array)
        .bind(now_ms())
        .fetch_all(&mut *conn)
        .await;
    match written {
        Ok(rows) => Ok(rows.into_iter().map(|(id,)| id).collect()),
        Err(e) => {
            // The transaction may be open still: end it, so the connection goes back clean.
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            Err(e)
        }
    }
}
