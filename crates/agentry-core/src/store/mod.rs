//! Where runs are checkpointed: the `RunStore` trait, its records, and an in-memory store.
//!
//! # The contract every store keeps
//! - **Checkpoints append.** [`RunStore::save`] writes, in one transaction, the messages the
//!   checkpoint appends to the run's message log, the events recorded since the previous
//!   checkpoint, and a small record of the run (its snapshot without the messages, and the
//!   [layout](LogLayout) of its history over the log): either all of it is stored or none. A
//!   checkpoint's cost does not depend on how long the run has been going.
//! - **Checkpoints follow one another.** A stored run has a revision: the number of its
//!   checkpoints written (a new run's first checkpoint follows revision 0). A checkpoint names
//!   the revision it follows ([`Checkpoint::revision`]) and is written only when the run is at
//!   that revision, else it fails with [`StoreError::OutOfOrder`] and changes nothing. So a
//!   checkpoint that fails leaves the run exactly at the previous one, and one handed over after
//!   it (built on a checkpoint that was never written) can never land on top of what is
//!   missing: a stored run is always a checkpoint whole, loadable and resumable once the store
//!   is back.
//! - **Leases: one driver per run.** Every run has a lease number, 0 when it is first saved, and
//!   an expiry. The process that saves a run holds its lease until the expiry, which every save
//!   and every [renewal](RunStore::renew) moves on; a save that pauses or ends the run releases
//!   it, and a renewal never takes a released lease back (it says so, [`Renewal::released`]).
//!   A process that wants to continue a stored run [claims](RunStore::claim) it with the
//!   lease and status it loaded: the claim succeeds only when the lease has expired or was
//!   released ([`StoreError::Leased`] otherwise, with the time left), for exactly one claimant,
//!   and moves the lease number on by one. A save or renewal under a lease that is no longer
//!   current fails with [`StoreError::Conflict`] and changes nothing, so a process that lost a
//!   run cannot overwrite the one that took it over.
//! - **Events** get consecutive sequence numbers per run, from 1, in the order they were saved.
//! - **Listing** returns the newest runs first: the reverse of the order in which they were first
//!   saved.

mod log;
mod media;
mod memory;
pub mod record;

pub use log::{LogAppend, LogLayout, LogSpan, MessageLog, history_from_log};
pub use media::{attach_media, detach_media, missing_blobs};
pub use memory::MemoryStore;

use crate::content::{Blob, BlobDigest};
pub use crate::run::recorded::{RecordedEvent, now_ms};
use crate::{Message, RunSnapshot, StopReason};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A store failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process holds the run: its lease moved on since this one loaded it.
    #[error(
        "run store `{store}`: run `{run_id}` was taken over by another process (it changed since \
         this one loaded it at lease {expected}); load it again to see where it stands"
    )]
    Conflict {
        /// The store.
        store: String,
        /// The run.
        run_id: String,
        /// The lease this process held.
        expected: u64,
    },
    /// Another process is driving the run: its lease has not expired.
    #[error(
        "run store `{store}`: run `{run_id}` is being driven by another process (its lease \
         expires in {remaining_ms} ms unless that process renews it); wait for it to pause or \
         end, or resume it once a process that died has let its lease expire"
    )]
    Leased {
        /// The store.
        store: String,
        /// The run.
        run_id: String,
        /// How long the lease has left, in milliseconds.
        remaining_ms: u64,
    },
    /// The store has no run with this id.
    #[error("run store `{store}` has no run `{run_id}`")]
    NotFound {
        /// The store.
        store: String,
        /// The run.
        run_id: String,
    },
    /// A checkpoint does not follow the run's stored revision: a checkpoint before it was not
    /// written (it failed), or another writer under the same lease wrote one. Nothing changed.
    #[error(
        "run store `{store}`: a checkpoint of run `{run_id}` follows revision {revision}, but the \
         store holds revision {stored}: a checkpoint before it was not written, so it was refused \
         and the run is as its last written checkpoint left it; load the run again to go on from \
         there"
    )]
    OutOfOrder {
        /// The store.
        store: String,
        /// The run.
        run_id: String,
        /// The revision the checkpoint follows.
        revision: u64,
        /// The run's revision in the store.
        stored: u64,
    },
    /// The store itself failed (connection, disk, a record it cannot read).
    #[error("run store `{store}` failed: {message}")]
    Backend {
        /// The store.
        store: String,
        /// What went wrong and what to do.
        message: String,
    },
}

impl StoreError {
    /// A backend failure of `store`.
    pub fn backend(store: impl Into<String>, message: impl fmt::Display) -> Self {
        StoreError::Backend {
            store: store.into(),
            message: message.to_string(),
        }
    }
}

/// Where a stored run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Under way, or its process died before it ended (resume it).
    Running,
    /// Paused until the pending tool calls are decided.
    AwaitingApproval,
    /// Cancelled; it can be resumed from its last checkpoint.
    Cancelled,
    /// Failed (its snapshot's `error` says why); it can be resumed from its last checkpoint.
    Failed,
    /// Ended for good.
    Finished,
}

impl RunStatus {
    /// The status of a run whose snapshot has this stop reason.
    pub fn of(stop: Option<&StopReason>) -> Self {
        match stop {
            None => RunStatus::Running,
            Some(StopReason::AwaitingApproval { .. }) => RunStatus::AwaitingApproval,
            Some(StopReason::Cancelled) => RunStatus::Cancelled,
            Some(_) => RunStatus::Finished,
        }
    }
    /// The status as stored: `running`, `awaiting_approval`, `cancelled`, `failed` or `finished`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::AwaitingApproval => "awaiting_approval",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Failed => "failed",
            RunStatus::Finished => "finished",
        }
    }
    /// The status of its stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => RunStatus::Running,
            "awaiting_approval" => RunStatus::AwaitingApproval,
            "cancelled" => RunStatus::Cancelled,
            "failed" => RunStatus::Failed,
            "finished" => RunStatus::Finished,
            _ => return None,
        })
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RunSnapshot {
    /// Where the run stands: [`RunStatus::Failed`] when it failed at this checkpoint, else what
    /// its stop reason says.
    pub fn status(&self) -> RunStatus {
        match (&self.stop, &self.error) {
            (None, Some(_)) => RunStatus::Failed,
            (stop, _) => RunStatus::of(stop.as_ref()),
        }
    }
}

/// A stored event: a recorded event with its sequence number in its run (from 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Its place in the run's history, from 1.
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: RecordedEvent,
}

/// What [`RunStore::save`] writes: a snapshot, the lease it is saved under, the messages it
/// appends to the run's log, and the events since the last checkpoint.
#[derive(Clone, Copy, Debug)]
pub struct Checkpoint<'a> {
    /// The run as it stands. Its `messages` are the whole history, shared; a store that keeps a
    /// log writes only `appended`, and `layout` says where the history lies in the log.
    pub snapshot: &'a RunSnapshot,
    /// The lease of the process saving it (0 for a new run).
    pub lease: u64,
    /// The run's revision in the store that this checkpoint follows: 0 for a new run, else the
    /// revision it was loaded at plus the checkpoints saved since ([`MessageLog`] keeps it). The
    /// store writes the checkpoint only at that revision, and moves it on by one.
    pub revision: u64,
    /// Messages appended to the log by this checkpoint, at positions
    /// `layout.next - appended.len()` onwards.
    pub appended: &'a [Arc<Message>],
    /// Where the history lies in the log after this checkpoint.
    pub layout: &'a LogLayout,
    /// Events since the previous checkpoint, oldest first.
    pub events: &'a [RecordedEvent],
    /// How long the saving process goes on holding the lease from now (`None` releases it: the
    /// run paused, ended or failed, and any process may claim it).
    pub hold: Option<Duration>,
}

/// A run as loaded from a store.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    /// Its last checkpoint, with its whole history.
    pub snapshot: RunSnapshot,
    /// Its current lease: claim it with this number to continue it.
    pub lease: u64,
    /// Its revision: how many of its checkpoints were written (the next one follows this).
    pub revision: u64,
    /// When its current lease lapses, in milliseconds since the Unix epoch; 0 when no process
    /// holds it (a paused or ended run). A run still `running` whose lease lapsed has no live
    /// driver ([`StoredRun::driver_gone`]): any process may resume it.
    pub lease_expires_ms: i64,
    /// Where its history lies in its message log (`None` for a run stored before histories were
    /// logged: its next checkpoint writes the whole history into the log).
    pub layout: Option<LogLayout>,
}

/// One line of a listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// Its agent.
    pub agent: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// Its parent run, for sub-agent runs.
    pub parent_run_id: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// Steps completed.
    pub step: u32,
    /// First saved, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last saved, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// When its current lease lapses, in milliseconds since the Unix epoch; 0 when no process
    /// holds it. See [`RunSummary::driver_gone`].
    #[serde(default)]
    pub lease_expires_ms: i64,
    /// Tokens it used so far (input and output; the stores keep the rest of its usage in its
    /// snapshot).
    #[serde(default)]
    pub usage: crate::Usage,
}

impl RunSummary {
    /// True when the run is `running` but its lease lapsed by `now_ms`: the process that drove
    /// it is gone (killed, crashed), and any process may resume it.
    pub fn driver_gone(&self, now_ms: i64) -> bool {
        self.status == RunStatus::Running && self.lease_expires_ms <= now_ms
    }
}

impl StoredRun {
    /// True when the run is `running` (no stop reason in its checkpoint) but its lease lapsed
    /// by `now_ms`: the process that drove it is gone, and any process may resume it.
    pub fn driver_gone(&self, now_ms: i64) -> bool {
        self.snapshot.status() == RunStatus::Running && self.lease_expires_ms <= now_ms
    }

    /// How long until its lease lapses, from `now_ms` (zero when it has).
    pub fn lease_remaining(&self, now_ms: i64) -> Duration {
        Duration::from_millis(u64::try_from(self.lease_expires_ms - now_ms).unwrap_or(0))
    }
}

/// Which runs to list. The default lists every run, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs of this session.
    pub session_id: Option<String>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// At most this many runs.
    pub limit: Option<u32>,
    /// Only runs first saved before this one (the last run of the previous page, for paging
    /// through a listing); a run the store does not hold leaves nothing before it.
    pub before: Option<String>,
    /// Only runs of their own: no sub-agent's run (one with a parent run).
    pub top_level: bool,
}

impl RunQuery {
    /// Every run.
    pub fn all() -> Self {
        RunQuery::default()
    }
    /// The runs of a session.
    pub fn session(session_id: impl Into<String>) -> Self {
        RunQuery {
            session_id: Some(session_id.into()),
            ..RunQuery::default()
        }
    }
    /// Only runs in `status`.
    pub fn status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// Only runs of `agent`.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }
    /// Only runs of their own, no sub-agent's run (whose events are in its parent's history).
    pub fn top_level(mut self) -> Self {
        self.top_level = true;
        self
    }
    /// At most `n` runs.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(n);
        self
    }
    /// Only runs first saved before the run `run_id`: the next page after a page that ended
    /// with it.
    pub fn before(mut self, run_id: impl Into<String>) -> Self {
        self.before = Some(run_id.into());
        self
    }
    /// True when `summary` passes the filters (not the limit, nor `before`).
    pub fn matches(&self, summary: &RunSummary) -> bool {
        self.admits(
            summary.session_id.as_deref(),
            &summary.agent,
            summary.status,
        )
    }

    /// True when a run of `session_id`, `agent` and `status` passes the filters (not the limit,
    /// nor `before`): [`matches`](Self::matches) for a store that has not built a summary.
    pub fn admits(&self, session_id: Option<&str>, agent: &str, status: RunStatus) -> bool {
        self.session_id
            .as_deref()
            .is_none_or(|s| session_id == Some(s))
            && self.agent.as_deref().is_none_or(|a| agent == a)
            && self.status.is_none_or(|s| status == s)
    }
}

/// The outcome of a checkpoint handed over with [`RunStore::save_queued`].
pub type QueuedSave = BoxFuture<'static, Result<(), StoreError>>;

/// How many stored events a reader of a run's history takes at once, by default
/// ([`RunStore::events_page`]).
pub const DEFAULT_EVENTS_PAGE: usize = 1000;

/// Persists runs: their checkpoints, leases and event histories. See the module docs for the
/// contract; `agentry-store` has SQLite and Postgres implementations.
pub trait RunStore: Send + Sync + 'static {
    /// The store's name, for errors (`memory`, `sqlite:runs.db`, ...).
    fn name(&self) -> &str;
    /// Saves a checkpoint (its appended messages, events and record) in one transaction. A new
    /// run (revision 0) is created with lease 0; an existing one is written only when
    /// `checkpoint.lease` is its current lease, else [`StoreError::Conflict`], and when
    /// `checkpoint.revision` is its revision, else [`StoreError::OutOfOrder`]; its revision then
    /// moves on by one. The lease's expiry becomes now plus `checkpoint.hold`, or the lease is
    /// released when `hold` is `None`. A save that fails writes nothing.
    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Hands a checkpoint over to be saved as [`save`](Self::save) does, and returns its
    /// outcome as a future that borrows nothing, so the caller can go on while it is written.
    /// Checkpoints handed over by one caller are written in the order they were handed over
    /// (a caller may hand over the next one before the outcome of the last is known: when that
    /// one fails, the next is refused, as it follows a revision the run never reached);
    /// `more_soon` says the caller expects to hand over another shortly (a store may then wait
    /// a moment to write both in one transaction).
    ///
    /// The default writes the checkpoint before it returns (its outcome is then ready); stores
    /// that write on a thread or connection of their own hand it over instead. An error here
    /// means the checkpoint could not be handed over; whether it was written is the outcome's.
    fn save_queued<'a>(
        &'a self,
        checkpoint: Checkpoint<'a>,
        more_soon: bool,
    ) -> BoxFuture<'a, Result<QueuedSave, StoreError>> {
        let _ = more_soon;
        Box::pin(async move {
            let outcome = self.save(checkpoint).await;
            Ok(Box::pin(std::future::ready(outcome)) as QueuedSave)
        })
    }
    /// Loads a run's last checkpoint and its lease.
    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>>;
    /// Takes a run over: when `lease` is its current lease and `status` its status (both as
    /// this process loaded them) and no process holds the lease (it expired or was released),
    /// moves the lease on by one, holds it for `hold` from now and returns it. Else
    /// [`StoreError::Leased`] while another process holds it, [`StoreError::Conflict`] when it
    /// changed since it was loaded, [`StoreError::NotFound`] for an unknown run. The status
    /// check keeps a process that loaded a paused run from taking it over after another process
    /// claimed it and saved it running.
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// Goes on holding a run's lease for `hold` from now, while `lease` is its current lease and
    /// is held, and says whether a cancel was requested meanwhile (one statement, so a lease
    /// keeper learns of it without a second round trip). A lease that a save released (the run
    /// paused, ended or failed) is left released, and the renewal says so
    /// ([`Renewal::released`]): a renewal that races the releasing save never takes the run back.
    /// Else [`StoreError::Conflict`] (the run was taken over) or [`StoreError::NotFound`].
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<Renewal, StoreError>>;
    /// Lists runs, newest first.
    fn list<'a>(
        &'a self,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>>;
    /// A run's event history, oldest first (empty for an unknown run).
    fn events<'a>(&'a self, run_id: &'a str)
    -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>>;
    /// The events of a run's history after the one numbered `after` (all of them for 0),
    /// oldest first: what a reader that follows a run has not seen yet. The default reads the
    /// whole history and drops the start; stores with an index answer from it.
    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(async move {
            let mut events = self.events(run_id).await?;
            events.retain(|e| e.seq > after);
            Ok(events)
        })
    }
    /// At most `limit` events of a run's history after the one numbered `after`, oldest first:
    /// one page of what a reader that follows a run has not seen yet, so that a reader of a
    /// long history holds a page at a time (see [`DEFAULT_EVENTS_PAGE`]). The default reads
    /// [`events_after`](Self::events_after) and keeps the page; stores with an index read only
    /// the page.
    fn events_page<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(async move {
            let mut events = self.events_after(run_id, after).await?;
            events.truncate(limit);
            Ok(events)
        })
    }
    /// The number of a run's last recorded event (0 for a run with none, or an unknown run):
    /// where a reader that follows the run from now on begins. The default reads the whole
    /// history; stores with an index answer from it.
    fn last_event_seq<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move { Ok(self.events(run_id).await?.last().map_or(0, |e| e.seq)) })
    }
    /// The bytes of a media part the store keeps under `digest` (a message's image, document or
    /// audio: see [`detach_media`]), for readers of recorded events, which hold media by
    /// reference. `None` when it keeps none under that digest; the default keeps none.
    fn blob<'a>(&'a self, digest: BlobDigest) -> BoxFuture<'a, Result<Option<Blob>, StoreError>> {
        let _ = digest;
        Box::pin(std::future::ready(Ok(None)))
    }
    /// Asks the process driving a run to cancel it: the request is recorded, and that process
    /// sees it the next time it renews the run's lease ([`cancel_requested`](Self::cancel_requested))
    /// and cancels the run there, checkpointed. A claim clears the request, so a run resumed
    /// after it is not cancelled again. [`StoreError::NotFound`] for an unknown run.
    ///
    /// The default says the store cannot: stores shared between processes implement it.
    fn request_cancel<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = run_id;
        Box::pin(std::future::ready(Err(StoreError::backend(
            self.name(),
            "this store cannot pass a cancel request to the process driving a run; cancel it in \
             that process",
        ))))
    }
    /// True when [`request_cancel`](Self::request_cancel) asked for the run to be cancelled
    /// since its lease `lease` was claimed. The default (a store that takes no requests) is
    /// never.
    fn cancel_requested<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let _ = (run_id, lease);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// What a renewed lease comes back with ([`RunStore::renew`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Renewal {
    /// [`RunStore::request_cancel`] asked for the run to be cancelled since the lease was
    /// claimed: its driver cancels it.
    pub cancel_requested: bool,
    /// The lease had been released by a save (the run paused, ended or failed): it was not
    /// renewed, and its keeper stops.
    pub released: bool,
}

impl Renewal {
    /// A renewal that says whether a cancel was requested.
    pub fn new(cancel_requested: bool) -> Self {
        Renewal {
            cancel_requested,
            released: false,
        }
    }

    /// The answer to a renewal of a lease that a save had released: nothing was renewed.
    pub fn lease_released() -> Self {
        Renewal {
            cancel_requested: false,
            released: true,
        }
    }
}

/// A shared store is a store: `Arc<dyn RunStore>` can be handed to a runtime.
impl<S: RunStore + ?Sized> RunStore for Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).save(checkpoint)
    }
    fn save_queued<'a>(
        &'a self,
        checkpoint: Checkpoint<'a>,
        more_soon: bool,
    ) -> BoxFuture<'a, Result<QueuedSave, StoreError>> {
        (**self).save_queued(checkpoint, more_soon)
    }
    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>> {
        (**self).load(run_id)
    }
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).claim(run_id, lease, status, hold)
    }
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<Renewal, StoreError>> {
        (**self).renew(run_id, lease, hold)
    }
    fn list<'a>(
        &'a self,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>> {
        (**self).list(query)
    }
    fn events<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        (**self).events(run_id)
    }
    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        (**self).events_after(run_id, after)
    }
    fn last_event_seq<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).last_event_seq(run_id)
    }
    fn request_cancel<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).request_cancel(run_id)
    }
    fn blob<'a>(&'a self, digest: BlobDigest) -> BoxFuture<'a, Result<Option<Blob>, StoreError>> {
        (**self).blob(digest)
    }
    fn cancel_requested<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).cancel_requested(run_id, lease)
    }
}
