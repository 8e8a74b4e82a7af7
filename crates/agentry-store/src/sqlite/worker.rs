//! The SQLite store's connection and its thread, which commit the checkpoints that wait
//! together in one transaction.
//!
//! SQLite has one writer at a time. Connections that each take the write lock in turn wait for
//! one another in SQLite's busy handler, which sleeps for milliseconds; one connection that
//! commits whatever checkpoints are waiting in one transaction instead shares a commit's cost
//! between every run that checkpointed meanwhile. It calls SQLite directly (prepared statements,
//! cached).
//!
//! A checkpoint is put in a queue. Whoever then waits for a checkpoint's outcome first tries to
//! commit the queue itself, on its own thread: waking a thread that sleeps while another commits
//! for it costs tens of microseconds on some machines, close to the commit's own cost. When the
//! connection is busy (another commit, an operation of the store), or the database is locked by
//! another process, it leaves the queue to the store's thread and sleeps until its outcome comes.
//! The store's thread does the store's other operations, and commits what nobody waits for: a
//! checkpoint handed over without waiting (the end of a step) is committed once it has waited a
//! moment for the next one, so both share one commit.

use super::checkpointer::Checkpointer;
use crate::error;
use agentry_core::StoreError;
use agentry_core::store::now_ms;
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::task::{Context, Poll};
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

/// How long a queued checkpoint that its caller waits for is left to the caller to commit before
/// the store's thread commits it (the caller normally does within microseconds).
const HELP_WAIT: Duration = Duration::from_micros(50);

/// How many batches a caller commits before it leaves the rest of the queue to the store's thread.
const HELP_ROUNDS: usize = 2;

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
    /// The run's revision the checkpoint follows.
    pub revision: i64,
    /// How long the lease is held from now, in ms (`None` releases it).
    pub hold_ms: Option<i64>,
    /// The snapshot without its messages, and their layout, as JSON text.
    pub record: String,
    /// The log position of the first appended message.
    pub first: i64,
    /// The appended messages, as JSON text.
    pub messages: Vec<String>,
    /// The bytes of their media, by SHA-256 (hex), for the `blobs` table.
    pub blobs: Vec<(String, bytes::Bytes)>,
    /// The events: when (ms), kind, data as JSON text.
    pub events: Vec<(i64, String, String)>,
}

/// What became of a checkpoint the store could write to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Written.
    Written,
    /// Not written: the run's lease or revision was not the checkpoint's. What its row holds
    /// (lease, revision), if there is one ([`rows::save_refused`](crate::rows::save_refused)
    /// says which).
    Refused(Option<(i64, i64)>),
}

/// Where a checkpoint's outcome goes.
type Outcome = oneshot::Sender<Result<Verdict, StoreError>>;

/// A checkpoint waiting in the queue, and where its outcome goes.
type Queued = (Box<SaveJob>, Outcome);

/// An operation for the store's thread.
enum Job {
    /// A checkpoint was queued: commit it once it has waited [`LINGER`] for a successor, unless
    /// someone has committed it by then.
    Queued,
    /// Someone waits for a queued checkpoint and could not commit it: commit the queue now.
    Flush,
    /// Anything else, run on the connection.
    Call(Box<dyn FnOnce(&mut Connection) + Send>),
}

/// The connection, and the checkpointer it nudges.
struct Db {
    conn: Connection,
    checkpointer: Option<Checkpointer>,
}

/// What the store's handles, its thread and the outcomes under way share.
struct Shared {
    name: Arc<str>,
    /// How long a write waits for another process's write to finish, on the store's thread.
    busy_timeout: Duration,
    /// Held by whoever uses the connection: the store's thread (which may wait for it) or a
    /// caller committing the queue (which only tries to take it).
    db: Mutex<Db>,
    /// The checkpoints waiting to be committed, in the order they were handed over.
    queue: Mutex<VecDeque<Queued>>,
    /// How many checkpoints wait in the queue (read without its lock).
    waiting: AtomicUsize,
    /// How many of them their callers wait for (not expecting a successor soon).
    awaited: AtomicUsize,
}

impl Shared {
    /// The connection, waited for (by the store's thread only).
    fn db(&self) -> MutexGuard<'_, Db> {
        self.db.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queue(&self) -> MutexGuard<'_, VecDeque<Queued>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts a checkpoint at the end of the queue.
    fn push(&self, job: Queued) {
        let mut queue = self.queue();
        if !job.0.more_soon {
            self.awaited.fetch_add(1, Ordering::Relaxed);
        }
        queue.push_back(job);
        self.waiting.store(queue.len(), Ordering::Release);
    }

    /// Takes the first [`MAX_BATCH`] checkpoints of the queue (called with the connection held,
    /// so batches are committed in the order they were taken).
    fn take_batch(&self) -> Vec<Queued> {
        let mut queue = self.queue();
        let n = queue.len().min(MAX_BATCH);
        let batch: Vec<Queued> = queue.drain(..n).collect();
        let awaited = batch.iter().filter(|(job, _)| !job.more_soon).count();
        self.awaited.fetch_sub(awaited, Ordering::Relaxed);
        self.waiting.store(queue.len(), Ordering::Release);
        batch
    }

    /// Puts a batch that could not be committed back at the front of the queue, in order.
    fn give_back(&self, batch: Vec<Queued>) {
        let mut queue = self.queue();
        for job in batch.into_iter().rev() {
            if !job.0.more_soon {
                self.awaited.fetch_add(1, Ordering::Relaxed);
            }
            queue.push_front(job);
        }
        self.waiting.store(queue.len(), Ordering::Release);
    }

    fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// Commits the queue on the caller's thread if the connection is free, without waiting for
    /// another process's write; true when the queue was left to the store's thread.
    fn help(&self) -> bool {
        let mut db = match self.db.try_lock() {
            Ok(db) => db,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return true,
        };
        // A database another process is writing is waited for on the store's thread, never on
        // the caller's (an async runtime's thread).
        if db.conn.busy_timeout(Duration::ZERO).is_err() {
            return true;
        }
        for _ in 0..HELP_ROUNDS {
            let batch = self.take_batch();
            if batch.is_empty() {
                break;
            }
            let saved = batch.len();
            match commit(&mut db.conn, batch) {
                Ok(()) => db.saved(saved),
                // Any failure is the store's thread's to report (it waits for a lock, and
                // writes the checkpoints of a batch one by one when one breaks a constraint).
                Err((batch, _)) => {
                    self.give_back(batch);
                    break;
                }
            }
        }
        let restored = db.conn.busy_timeout(self.busy_timeout).is_ok();
        drop(db);
        !restored || self.is_waiting()
    }

    /// Commits the whole queue on the store's thread.
    fn flush(&self) {
        // Left alone when empty: a caller may hold the connection, committing it.
        if !self.is_waiting() {
            return;
        }
        let mut db = self.db();
        loop {
            let batch = self.take_batch();
            if batch.is_empty() {
                return;
            }
            let saved = batch.len();
            save_batch(&mut db.conn, &self.name, batch);
            db.saved(saved);
        }
    }
}

impl Db {
    fn saved(&mut self, n: usize) {
        if let Some(checkpointer) = &mut self.checkpointer {
            checkpointer.saved(n);
        }
    }
}

/// The handle of a store's connection and thread; the thread ends when every handle (and every
/// outcome under way) is dropped.
#[derive(Clone)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

impl Worker {
    /// Starts the thread of the store `name`, which shares `conn` (and owns `checkpointer`, for
    /// a database in a file); its writes wait `busy_timeout` for other processes'.
    pub(super) fn start(
        conn: Connection,
        name: Arc<str>,
        checkpointer: Option<Checkpointer>,
        busy_timeout: Duration,
    ) -> Result<Worker, StoreError> {
        let shared = Arc::new(Shared {
            name: name.clone(),
            busy_timeout,
            db: Mutex::new(Db { conn, checkpointer }),
            queue: Mutex::new(VecDeque::new()),
            waiting: AtomicUsize::new(0),
            awaited: AtomicUsize::new(0),
        });
        let (jobs, queue) = mpsc::channel();
        let on_thread = shared.clone();
        std::thread::Builder::new()
            .name("agentry-sqlite".into())
            .spawn(move || work(&on_thread, queue))
            .map_err(|e| {
                StoreError::backend(
                    &*name,
                    format!("cannot start the store's thread ({e}); the system is out of threads"),
                )
            })?;
        Ok(Worker { jobs, shared })
    }

    /// Queues a checkpoint and returns its outcome. Checkpoints are written in the order they
    /// were queued. Awaiting the outcome commits the queue on the caller's thread when the
    /// connection is free.
    pub(super) fn queue(&self, job: SaveJob) -> Result<Written, StoreError> {
        let (done, outcome) = oneshot::channel();
        self.shared.push((Box::new(job), done));
        if self.jobs.send(Job::Queued).is_err() {
            return Err(gone(&self.shared.name));
        }
        Ok(Written {
            outcome,
            helped: false,
            shared: self.shared.clone(),
            jobs: self.jobs.clone(),
        })
    }

    /// Runs `op` on the store's thread, with the connection, and returns what it returns.
    pub(super) async fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (done, outcome) = oneshot::channel();
        let job = Job::Call(Box::new(move |conn| {
            let _ = done.send(op(conn));
        }));
        let name = &self.shared.name;
        self.jobs.send(job).map_err(|_| gone(name))?;
        outcome.await.map_err(|_| gone(name))?
    }
}

/// The error when the store's thread is gone.
fn gone(name: &str) -> StoreError {
    StoreError::backend(
        name,
        "the store's thread stopped (it panicked; see the log); open the store again",
    )
}

/// The outcome of a queued checkpoint. Its first poll commits the queue when the connection is
/// free (see the module's documentation).
pub(super) struct Written {
    outcome: oneshot::Receiver<Result<Verdict, StoreError>>,
    helped: bool,
    shared: Arc<Shared>,
    jobs: mpsc::Sender<Job>,
}

impl Future for Written {
    type Output = Result<Verdict, StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            if let Poll::Ready(outcome) = Pin::new(&mut this.outcome).poll(cx) {
                return Poll::Ready(outcome.map_err(|_| gone(&this.shared.name))?);
            }
            if this.helped {
                return Poll::Pending;
            }
            this.helped = true;
            if this.shared.help() && this.jobs.send(Job::Flush).is_err() {
                return Poll::Ready(Err(gone(&this.shared.name)));
            }
        }
    }
}

/// The store's thread: runs each operation in turn, and commits the queued checkpoints nobody
/// commits, once they waited [`LINGER`] for their successors; when every handle is dropped,
/// commits what is left and ends.
fn work(shared: &Shared, jobs: mpsc::Receiver<Job>) {
    while let Some(job) = next(&jobs) {
        match job {
            Job::Call(op) => op(&mut shared.db().conn),
            Job::Flush => shared.flush(),
            Job::Queued => {
                linger(shared);
                shared.flush();
            }
        }
    }
    shared.flush();
}

/// Waits a moment (awake) for a queued checkpoint's successor, or for a caller to commit the
/// queue: [`LINGER`] from now, or [`HELP_WAIT`] from when a checkpoint someone waits for joined
/// the queue.
fn linger(shared: &Shared) {
    let start = Instant::now();
    let mut awaited_since = None;
    for polls in 0u32.. {
        if !shared.is_waiting() {
            return;
        }
        if polls % 64 == 0 {
            // Leave the core to any thread that is ready to run (the checkpoint's successor
            // is often made by one); with none, this returns at once.
            std::thread::yield_now();
            let now = Instant::now();
            if shared.awaited.load(Ordering::Relaxed) > 0 {
                let since = *awaited_since.get_or_insert(now);
                if now - since >= HELP_WAIT {
                    return;
                }
            }
            if now - start >= LINGER {
                return;
            }
        }
        std::hint::spin_loop();
    }
}

/// The next operation if one comes within `limit`, looked for without sleeping (reading the
/// clock every 64 polls: reading it costs more than a poll).
fn next_within(queue: &mpsc::Receiver<Job>, limit: Duration) -> Result<Job, TryRecvError> {
    let start = Instant::now();
    for polls in 0u32.. {
        match queue.try_recv() {
            Err(TryRecvError::Empty) if polls % 64 != 0 => std::hint::spin_loop(),
            // Every 64 polls: leave the core to any thread ready to run (the next operation
            // comes from one; on a busy machine spinning would keep it waiting), then look at
            // the clock.
            Err(TryRecvError::Empty) if start.elapsed() < limit => std::thread::yield_now(),
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

/// Commits `batch` and tells each checkpoint its outcome; gives the batch back, untold, with
/// the error when anything failed (nothing is then written).
fn commit(conn: &mut Connection, batch: Vec<Queued>) -> Result<(), (Vec<Queued>, rusqlite::Error)> {
    let jobs: Vec<&SaveJob> = batch.iter().map(|(job, _)| &**job).collect();
    match write(conn, &jobs) {
        Ok(written) => {
            for ((_, done), ok) in batch.into_iter().zip(written) {
                let _ = done.send(Ok(ok));
            }
            Ok(())
        }
        Err(e) => Err((batch, e)),
    }
}

/// Commits `batch` and tells each checkpoint its outcome, waiting for the database as long as
/// its busy timeout says.
fn save_batch(conn: &mut Connection, name: &str, batch: Vec<Queued>) {
    let Err((batch, e)) = commit(conn, batch) else {
        return;
    };
    match e {
        // A checkpoint that breaks a constraint must not fail the others: write each alone.
        e if batch.len() > 1 && e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
            for (job, done) in batch {
                let outcome = write(conn, &[&*job])
                    .map(|verdicts| verdicts[0])
                    .map_err(|e| {
                        error::sqlite(name, format_args!("saving run `{}`", job.run_id), e)
                    });
                let _ = done.send(outcome);
            }
        }
        e => {
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

/// Writes `jobs` in one transaction; for each, its verdict.
///
/// Consecutive checkpoints of one run under one lease, each following the one before (a step's
/// end and the next turn's tool calls, say), get the same verdict and leave the run's row as the
/// last of them says: they are written as one update of the row and every row they append.
fn write(conn: &mut Connection, jobs: &[&SaveJob]) -> rusqlite::Result<Vec<Verdict>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_ms();
    let mut verdicts = Vec::with_capacity(jobs.len());
    let follows = |a: &&SaveJob, b: &&SaveJob| {
        a.run_id == b.run_id && a.lease == b.lease && a.revision.checked_add(1) == Some(b.revision)
    };
    for group in jobs.chunk_by(follows) {
        let verdict = save(&tx, group, now)?;
        verdicts.extend(std::iter::repeat_n(verdict, group.len()));
    }
    tx.commit()?;
    Ok(verdicts)
}

/// Writes consecutive checkpoints of one run under one lease (`group`, never empty, each
/// following the one before) in the open transaction, when the run's lease is theirs and it is
/// at the revision the first follows.
fn save(conn: &Connection, group: &[&SaveJob], now: i64) -> rusqlite::Result<Verdict> {
    let (first, last) = (group[0], group[group.len() - 1]);
    let added: usize = group.iter().map(|job| job.events.len()).sum();
    let mut events = update(conn, first.revision, last, added, now)?;
    // A run saved for the first time (under lease 0, at revision 0 only) is inserted, then
    // updated. An insert that finds the run there after all leaves the verdict to the update.
    if events.is_none() && first.lease == 0 && first.revision == 0 {
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
        events = update(conn, first.revision, last, added, now)?;
    }
    let Some(Updated { run_no, events }) = events else {
        return refused(conn, first);
    };
    // The bytes first, once per content: a message never names bytes the store lacks.
    let mut add_blob = conn
        .prepare_cached("INSERT OR IGNORE INTO blobs (sha256, size, bytes) VALUES (?1, ?2, ?3)")?;
    for (sha256, bytes) in group.iter().flat_map(|job| &job.blobs) {
        add_blob.execute(params![sha256, bytes.len() as i64, bytes.as_ref()])?;
    }
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
    Ok(Verdict::Written)
}

/// The verdict on a checkpoint of `job`'s run that was not written: what the run's row holds.
fn refused(conn: &Connection, job: &SaveJob) -> rusqlite::Result<Verdict> {
    let found = conn
        .prepare_cached("SELECT lease, revision FROM runs WHERE run_id = ?1")?
        .query_row([&job.run_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(Verdict::Refused(found))
}

/// A run's row after a checkpoint updated it.
struct Updated {
    /// The run's number, which keys its messages and events.
    run_no: i64,
    /// Its event count.
    events: i64,
}

/// Updates the run's row as `job` says, counting `added` more events, when its lease is the
/// checkpoint's and it is at revision `from`, and moves its revision on to follow `job`. (A run's
/// agent, session and parent are set when it is inserted; its status is written only when it
/// changed, so the status index is left alone by most checkpoints.)
fn update(
    conn: &Connection,
    from: i64,
    job: &SaveJob,
    added: usize,
    now: i64,
) -> rusqlite::Result<Option<Updated>> {
    let mut update = conn.prepare_cached(
        "UPDATE runs SET step = ?3, updated_ms = ?4, snapshot = ?5, \
         lease_expires_ms = COALESCE(?4 + ?6, 0), events = events + ?7, revision = ?9 + 1 \
         WHERE run_id = ?1 AND lease = ?2 AND revision = ?8 RETURNING events, status, position",
    )?;
    let mut rows = update.query(params![
        job.run_id,
        job.lease,
        job.step,
        now,
        job.record,
        job.hold_ms,
        added as i64,
        from,
        job.revision,
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
