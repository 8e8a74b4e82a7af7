//! The SQLite store's worker: one thread per store that owns a connection and does every
//! operation of the store, committing the checkpoints that wait together in one transaction.
//!
//! SQLite has one writer at a time. Connections that each take the write lock in turn wait for
//! one another in SQLite's busy handler, which sleeps for milliseconds; one thread that commits
//! whatever checkpoints are waiting in one transaction instead shares a commit's cost between
//! every run that checkpointed meanwhile. It calls SQLite directly (prepared statements, cached),
//! so an operation costs one hand-off to the thread and one back.

use super::checkpointer::Checkpointer;
use crate::error;
use agentry_core::StoreError;
use agentry_core::store::now_ms;
use rusqlite::{Connection, ErrorCode, TransactionBehavior, params};
use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc::{self, TryRecvError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// At most this many checkpoints are committed together.
const MAX_BATCH: usize = 256;

/// How long the worker keeps looking for the next operation before it sleeps. Waking a sleeping
/// thread costs tens of microseconds on some machines, more than a checkpoint's own work; a run
/// checkpoints again within microseconds of its last checkpoint, so the thread usually finds it
/// without sleeping.
const SPIN: Duration = Duration::from_micros(200);

/// How long a checkpoint whose caller expects to hand over another soon waits for it, so both
/// are committed in one transaction: a run checkpoints the end of a step and, a model turn later,
/// the next turn's tool calls. Short enough that a slow model turn costs the first checkpoint
/// no more than this.
const LINGER: Duration = Duration::from_micros(150);

/// A checkpoint as the worker writes it: its run's columns, its record, and what it appends.
pub(super) struct SaveJob {
    /// Its caller expects to hand over another checkpoint shortly: worth waiting a moment for,
    /// to commit both together.
    pub more_soon: bool,
    pub run_id: String,
    pub agent: String,
    pub session_id: Option<String>,
    pub parent_run_id: Option<String>,
    pub status: &'static str,
    pub step: i64,
    pub lease: i64,
    /// How long the lease is held from now, in ms (`None` releases it).
    pub hold_ms: Option<i64>,
    /// The snapshot without its messages, and their layout, as JSON text.
    pub record: String,
    /// The log position of the first appended message.
    pub first: i64,
    /// The appended messages, as JSON text.
    pub messages: Vec<String>,
    /// The events: when (ms), kind, data as JSON text.
    pub events: Vec<(i64, String, String)>,
}

/// Where a checkpoint's outcome goes: true when written, false when the run's lease was not the
/// checkpoint's.
type Outcome = oneshot::Sender<Result<bool, StoreError>>;

/// An operation for the worker.
enum Job {
    /// A checkpoint, and where its outcome goes.
    Save(Box<SaveJob>, Outcome),
    /// Anything else, run on the connection.
    Call(Box<dyn FnOnce(&mut Connection) + Send>),
}

/// The handle of a store's worker thread; the thread ends when every handle is dropped.
#[derive(Clone)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
    name: Arc<str>,
}

impl Worker {
    /// Starts the worker of the store `name`, which owns `conn` (and `checkpointer`, for a
    /// database in a file).
    pub(super) fn start(
        conn: Connection,
        name: Arc<str>,
        checkpointer: Option<Checkpointer>,
    ) -> Result<Worker, StoreError> {
        let (jobs, queue) = mpsc::channel();
        let thread_name = name.clone();
        std::thread::Builder::new()
            .name("agentry-sqlite".into())
            .spawn(move || work(conn, &thread_name, queue, checkpointer))
            .map_err(|e| {
                StoreError::backend(
                    &*name,
                    format!("cannot start the store's thread ({e}); the system is out of threads"),
                )
            })?;
        Ok(Worker { jobs, name })
    }

    /// Hands a checkpoint to the thread and returns its outcome: true when written, false when
    /// its run's lease was not the checkpoint's (or, for a checkpoint under lease 0, the run
    /// exists under another). Checkpoints are written in the order they were handed over.
    pub(super) fn queue(
        &self,
        job: SaveJob,
    ) -> Result<impl Future<Output = Result<bool, StoreError>> + Send + 'static, StoreError> {
        let (done, outcome) = oneshot::channel();
        self.jobs
            .send(Job::Save(Box::new(job), done))
            .map_err(|_| self.gone())?;
        let gone = self.gone();
        Ok(async move { outcome.await.map_err(|_| gone)? })
    }

    /// Runs `op` on the worker's connection and returns what it returns.
    pub(super) async fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (done, outcome) = oneshot::channel();
        let job = Job::Call(Box::new(move |conn| {
            let _ = done.send(op(conn));
        }));
        self.jobs.send(job).map_err(|_| self.gone())?;
        outcome.await.map_err(|_| self.gone())?
    }

    fn gone(&self) -> StoreError {
        StoreError::backend(
            &*self.name,
            "the store's thread stopped (it panicked; see the log); open the store again",
        )
    }
}

/// The worker thread: does each operation in turn; checkpoints waiting together are committed
/// in one transaction, in the order they came (so several of one run apply one after another).
fn work(
    mut conn: Connection,
    name: &str,
    queue: mpsc::Receiver<Job>,
    mut checkpointer: Option<Checkpointer>,
) {
    let mut held_over: Option<Job> = None;
    loop {
        let job = match held_over.take() {
            Some(job) => job,
            None => match next(&queue) {
                Some(job) => job,
                None => return,
            },
        };
        let (first, done) = match job {
            Job::Call(op) => {
                op(&mut conn);
                continue;
            }
            Job::Save(job, done) => (job, done),
        };
        let mut batch = vec![(first, done)];
        let mut lingered = false;
        while batch.len() < MAX_BATCH {
            let next = match queue.try_recv() {
                Ok(job) => Some(job),
                // Every checkpoint so far expects a successor soon: wait a moment for it, once.
                Err(TryRecvError::Empty) if !lingered && batch.iter().all(|(j, _)| j.more_soon) => {
                    lingered = true;
                    next_within(&queue, LINGER).ok()
                }
                Err(_) => None,
            };
            match next {
                Some(Job::Save(job, done)) => batch.push((job, done)),
                Some(other) => {
                    held_over = Some(other);
                    break;
                }
                None => break,
            }
        }
        let saved = batch.len();
        save_batch(&mut conn, name, batch);
        if let Some(checkpointer) = &mut checkpointer {
            checkpointer.saved(saved);
        }
    }
}

/// The next operation if one comes within `limit`, looked for without sleeping (reading the
/// clock every 64 polls: reading it costs more than a poll).
fn next_within(queue: &mpsc::Receiver<Job>, limit: Duration) -> Result<Job, TryRecvError> {
    let start = Instant::now();
    for polls in 0u32.. {
        match queue.try_recv() {
            Err(TryRecvError::Empty) if polls % 64 != 0 || start.elapsed() < limit => {
                std::hint::spin_loop()
            }
            outcome => return outcome,
        }
    }
    Err(TryRecvError::Empty)
}

/// The next operation: looked for for a while, then waited for (`None` once every handle is
/// dropped).
fn next(queue: &mpsc::Receiver<Job>) -> Option<Job> {
    match next_within(queue, SPIN) {
        Ok(job) => Some(job),
        Err(TryRecvError::Disconnected) => None,
        Err(TryRecvError::Empty) => queue.recv().ok(),
    }
}

/// Commits `batch` and tells each checkpoint its outcome.
fn save_batch(conn: &mut Connection, name: &str, batch: Vec<(Box<SaveJob>, Outcome)>) {
    let jobs: Vec<&SaveJob> = batch.iter().map(|(job, _)| &**job).collect();
    match write(conn, &jobs) {
        Ok(written) => {
            for ((_, done), ok) in batch.into_iter().zip(written) {
                let _ = done.send(Ok(ok));
            }
        }
        // A checkpoint that breaks a constraint must not fail the others: write each alone.
        Err(e)
            if batch.len() > 1 && e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) =>
        {
            for (job, done) in batch {
                let outcome = write(conn, &[&*job])
                    .map(|written| written[0])
                    .map_err(|e| {
                        error::sqlite(name, format_args!("saving run `{}`", job.run_id), e)
                    });
                let _ = done.send(outcome);
            }
        }
        Err(e) => {
            let doing = match batch.as_slice() {
                [(job, _)] => format!("saving run `{}`", job.run_id),
                _ => format!("saving {} checkpoints together", batch.len()),
            };
            let failed = error::sqlite(name, doing, e);
            for (_, done) in batch {
                let _ = done.send(Err(failed.clone()));
            }
        }
    }
}

/// Writes `jobs` in one transaction; for each, whether it was written.
///
/// Consecutive checkpoints of one run under one lease (a step's end and the next turn's tool
/// calls, say) get the same verdict and leave the run's row as the last of them says: they are
/// written as one update of the row and every row they append.
fn write(conn: &mut Connection, jobs: &[&SaveJob]) -> rusqlite::Result<Vec<bool>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_ms();
    let mut written = Vec::with_capacity(jobs.len());
    for group in jobs.chunk_by(|a, b| a.run_id == b.run_id && a.lease == b.lease) {
        let ok = save(&tx, group, now)?;
        written.extend(std::iter::repeat_n(ok, group.len()));
    }
    tx.commit()?;
    Ok(written)
}

/// Writes consecutive checkpoints of one run under one lease (`group`, never empty) in the open
/// transaction, when the run's lease is theirs.
fn save(conn: &Connection, group: &[&SaveJob], now: i64) -> rusqlite::Result<bool> {
    let (first, last) = (group[0], group[group.len() - 1]);
    let added: usize = group.iter().map(|job| job.events.len()).sum();
    let mut events = update(conn, last, added, now)?;
    // A run saved for the first time (under lease 0 only) is inserted, then updated. An insert
    // that finds the run there after all leaves the verdict to the update: a run under another
    // lease is a conflict.
    if events.is_none() && first.lease == 0 {
        conn.prepare_cached(
            "INSERT INTO runs (run_id, position, agent, session_id, parent_run_id, status, step, \
             lease, created_ms, updated_ms, snapshot) \
             VALUES (?1, (SELECT COALESCE(MAX(position), 0) + 1 FROM runs), ?2, ?3, ?4, ?5, ?6, \
             0, ?7, ?7, '{}') ON CONFLICT (run_id) DO NOTHING",
        )?
        .execute(params![
            first.run_id,
            first.agent,
            first.session_id,
            first.parent_run_id,
            first.status,
            first.step,
            now
        ])?;
        events = update(conn, last, added, now)?;
    }
    let Some(Updated { run_no, events }) = events else {
        return Ok(false);
    };
    let mut add_message =
        conn.prepare_cached("INSERT INTO run_messages (run_no, pos, body) VALUES (?1, ?2, ?3)")?;
    for job in group {
        for (pos, body) in (job.first..).zip(&job.messages) {
            add_message.execute(params![run_no, pos, body])?;
        }
    }
    let mut add_event = conn.prepare_cached(
        "INSERT INTO run_events (run_no, seq, at_ms, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let recorded = group.iter().flat_map(|job| &job.events);
    for (seq, (at_ms, kind, data)) in (events - added as i64 + 1..).zip(recorded) {
        add_event.execute(params![run_no, seq, at_ms, kind, data])?;
    }
    Ok(true)
}

/// A run's row after a checkpoint updated it.
struct Updated {
    /// The run's number, which keys its messages and events.
    run_no: i64,
    /// Its event count.
    events: i64,
}

/// Updates the run's row as `job` says, counting `added` more events, when its lease is the
/// checkpoint's. (A run's agent, session and parent are set when it is inserted; its status is
/// written only when it changed, so the status index is left alone by most checkpoints.)
fn update(
    conn: &Connection,
    job: &SaveJob,
    added: usize,
    now: i64,
) -> rusqlite::Result<Option<Updated>> {
    let mut update = conn.prepare_cached(
        "UPDATE runs SET step = ?3, updated_ms = ?4, snapshot = ?5, \
         lease_expires_ms = COALESCE(?4 + ?6, 0), events = events + ?7 \
         WHERE run_id = ?1 AND lease = ?2 RETURNING events, status, position",
    )?;
    let mut rows = update.query(params![
        job.run_id,
        job.lease,
        job.step,
        now,
        job.record,
        job.hold_ms,
        added as i64,
    ])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    let (events, status, run_no): (i64, String, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
    drop(rows);
    if status != job.status {
        conn.prepare_cached("UPDATE runs SET status = ?2 WHERE run_id = ?1")?
            .execute(params![job.run_id, job.status])?;
    }
    Ok(Some(Updated { run_no, events }))
}
