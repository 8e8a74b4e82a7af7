//! [`MemoryStore`]: runs in memory, for tests and single-process use.

use super::{
    Checkpoint, LogLayout, Renewal, RunQuery, RunStatus, RunStore, RunSummary, StoreError,
    StoredEvent, StoredRun, now_ms,
};
use crate::RunSnapshot;
use crate::content::{Blob, BlobDigest};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A store in memory, for tests and single-process use. Clones share the same runs.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentry_core::{MemoryStore, RunQuery, RunStore};
/// let store = MemoryStore::new();
/// assert!(store.load("nope").await.unwrap().is_none());
/// assert!(store.list(&RunQuery::all()).await.unwrap().is_empty());
/// # });
/// ```
#[derive(Clone, Default)]
pub struct MemoryStore {
    runs: Arc<Mutex<HashMap<String, MemoryRun>>>,
    /// The media of the messages saved, by digest (shared with the messages: no copy).
    blobs: Arc<Mutex<HashMap<BlobDigest, Blob>>>,
}

struct MemoryRun {
    /// The order of first saves, store-wide.
    order: u64,
    snapshot: RunSnapshot,
    layout: LogLayout,
    lease: u64,
    /// How many checkpoints were written.
    revision: u64,
    /// When the lease expires, in ms since the Unix epoch (0: released).
    lease_expires_ms: i64,
    created_ms: i64,
    updated_ms: i64,
    events: Vec<StoredEvent>,
    /// Set by a cancel request; cleared by a claim.
    cancel_requested: bool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
    /// The ids of the runs it holds.
    pub fn run_ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, MemoryRun>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn not_found(run_id: &str) -> StoreError {
        StoreError::NotFound {
            store: "memory".into(),
            run_id: run_id.to_string(),
        }
    }
    fn out_of_order(run_id: &str, revision: u64, stored: u64) -> StoreError {
        StoreError::OutOfOrder {
            store: "memory".into(),
            run_id: run_id.to_string(),
            revision,
            stored,
        }
    }
    fn conflict(run_id: &str, expected: u64) -> StoreError {
        StoreError::Conflict {
            store: "memory".into(),
            run_id: run_id.to_string(),
            expected,
        }
    }
}

impl RunStore for MemoryStore {
    fn name(&self) -> &str {
        "memory"
    }

    fn save<'a>(&'a self, checkpoint: Checkpoint<'a>) -> BoxFuture<'a, Result<(), StoreError>> {
        let media = checkpoint
            .appended
            .iter()
            .filter_map(|m| m.content())
            .flat_map(|c| c.blobs())
            .filter(|b| b.is_loaded());
        for blob in media {
            let mut blobs = self.blobs.lock().unwrap_or_else(|p| p.into_inner());
            blobs.entry(blob.digest()).or_insert_with(|| blob.clone());
        }
        let result = (|| {
            let now = now_ms();
            let snapshot = checkpoint.snapshot;
            let mut runs = self.lock();
            let run = match runs.get_mut(&snapshot.run_id) {
                Some(run) if run.lease != checkpoint.lease => {
                    return Err(Self::conflict(&snapshot.run_id, checkpoint.lease));
                }
                Some(run) => run,
                None if checkpoint.lease != 0 => {
                    return Err(Self::conflict(&snapshot.run_id, checkpoint.lease));
                }
                // A run that is not there is at revision 0.
                None if checkpoint.revision != 0 => {
                    return Err(Self::out_of_order(&snapshot.run_id, checkpoint.revision, 0));
                }
                None => {
                    let order = runs.len() as u64;
                    runs.entry(snapshot.run_id.clone()).or_insert(MemoryRun {
                        order,
                        snapshot: snapshot.clone(),
                        layout: LogLayout::default(),
                        lease: 0,
                        revision: 0,
                        lease_expires_ms: 0,
                        created_ms: now,
                        updated_ms: now,
                        events: Vec::new(),
                        cancel_requested: false,
                    })
                }
            };
            if run.revision != checkpoint.revision {
                return Err(Self::out_of_order(
                    &snapshot.run_id,
                    checkpoint.revision,
                    run.revision,
                ));
            }
            run.revision += 1;
            run.snapshot = snapshot.clone();
            run.layout = checkpoint.layout.clone();
            run.lease_expires_ms = expiry(now, checkpoint.hold);
            run.updated_ms = now;
            for event in checkpoint.events {
                let seq = run.events.len() as u64 + 1;
                run.events.push(StoredEvent {
                    seq,
                    event: event.clone(),
                });
            }
            Ok(())
        })();
        Box::pin(async move { result })
    }

    fn blob<'a>(&'a self, digest: BlobDigest) -> BoxFuture<'a, Result<Option<Blob>, StoreError>> {
        let blobs = self.blobs.lock().unwrap_or_else(|p| p.into_inner());
        Box::pin(std::future::ready(Ok(blobs.get(&digest).cloned())))
    }
    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<StoredRun>, StoreError>> {
        let found = self.lock().get(run_id).map(|r| StoredRun {
            snapshot: r.snapshot.clone(),
            lease: r.lease,
            revision: r.revision,
            lease_expires_ms: r.lease_expires_ms,
            layout: Some(r.layout.clone()),
        });
        Box::pin(async move { Ok(found) })
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let now = now_ms();
        let result = match self.lock().get_mut(run_id) {
            None => Err(Self::not_found(run_id)),
            Some(run) if run.lease != lease || run.snapshot.status() != status => {
                Err(Self::conflict(run_id, lease))
            }
            Some(run) if run.lease_expires_ms > now => Err(StoreError::Leased {
                store: "memory".into(),
                run_id: run_id.to_string(),
                remaining_ms: (run.lease_expires_ms - now) as u64,
            }),
            Some(run) => {
                run.lease += 1;
                run.lease_expires_ms = expiry(now, Some(hold));
                run.cancel_requested = false;
                Ok(run.lease)
            }
        };
        Box::pin(async move { result })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<Renewal, StoreError>> {
        let result = match self.lock().get_mut(run_id) {
            None => Err(Self::not_found(run_id)),
            Some(run) if run.lease != lease => Err(Self::conflict(run_id, lease)),
            Some(run) if run.lease_expires_ms == RELEASED => Ok(Renewal::lease_released()),
            Some(run) => {
                run.lease_expires_ms = expiry(now_ms(), Some(hold));
                Ok(Renewal::new(run.cancel_requested))
            }
        };
        Box::pin(async move { result })
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = match self.lock().get_mut(run_id) {
            None => Err(Self::not_found(run_id)),
            Some(run) => {
                run.cancel_requested = true;
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn cancel_requested<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let result = match self.lock().get(run_id) {
            None => Err(Self::not_found(run_id)),
            Some(run) => Ok(run.lease == lease && run.cancel_requested),
        };
        Box::pin(std::future::ready(result))
    }

    fn list<'a>(
        &'a self,
        query: &'a RunQuery,
    ) -> BoxFuture<'a, Result<Vec<RunSummary>, StoreError>> {
        let runs = self.lock();
        // Only matching runs are summarised (a session's next run lists the session's runs,
        // so a store of many runs must not build a summary of each).
        let bound = match &query.before {
            Some(before) => runs.get(before).map_or(0, |r| r.order),
            None => u64::MAX,
        };
        let mut found: Vec<(u64, RunSummary)> = runs
            .values()
            .filter(|r| {
                let s = &r.snapshot;
                r.order < bound
                    && (!query.top_level || s.parent_run_id.is_none())
                    && query.admits(s.session_id.as_deref(), &s.agent, s.status())
            })
            .map(|r| {
                (
                    r.order,
                    RunSummary {
                        run_id: r.snapshot.run_id.clone(),
                        agent: r.snapshot.agent.clone(),
                        session_id: r.snapshot.session_id.clone(),
                        parent_run_id: r.snapshot.parent_run_id.clone(),
                        status: r.snapshot.status(),
                        step: r.snapshot.step,
                        created_ms: r.created_ms,
                        updated_ms: r.updated_ms,
                        lease_expires_ms: r.lease_expires_ms,
                        usage: crate::Usage::new(
                            r.snapshot.usage.input_tokens,
                            r.snapshot.usage.output_tokens,
                        ),
                    },
                )
            })
            .collect();
        drop(runs);
        found.sort_by_key(|(order, _)| std::cmp::Reverse(*order));
        if let Some(limit) = query.limit {
            found.truncate(limit as usize);
        }
        let found = found.into_iter().map(|(_, s)| s).collect();
        Box::pin(async move { Ok(found) })
    }

    fn events<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        let events = self
            .lock()
            .get(run_id)
            .map(|r| r.events.clone())
            .unwrap_or_default();
        Box::pin(async move { Ok(events) })
    }

    fn last_event_seq<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        let last = self
            .lock()
            .get(run_id)
            .and_then(|r| r.events.last())
            .map_or(0, |e| e.seq);
        Box::pin(std::future::ready(Ok(last)))
    }
}

/// The expiry of a released lease.
const RELEASED: i64 = 0;

/// The expiry of a lease held for `hold` from `now` (released for `None`).
fn expiry(now: i64, hold: Option<Duration>) -> i64 {
    hold.map_or(RELEASED, |h| {
        now.saturating_add(i64::try_from(h.as_millis()).unwrap_or(i64::MAX))
    })
}
