//! The SQLite store's checkpointer: a thread of its own that copies the write-ahead log into the
//! database file, so that a commit never waits for that copy.
//!
//! In WAL mode a commit appends pages to the log; a checkpoint later copies them into the
//! database file and syncs it, which takes milliseconds. Left to SQLite, the commit that finds the
//! log past its threshold runs the checkpoint itself, and every run waiting on that commit waits
//! for it too. The store's connection instead nudges this thread every [`NUDGE_EVERY`] checkpoints it
//! writes, and this thread runs a passive checkpoint on a connection of its own, which copies
//! what it can without holding up writers. (The store's connection keeps a high automatic
//! threshold as a backstop, so the log stays bounded should this thread fall behind.)

use crate::error;
use agentry_core::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, SyncSender};

/// How many saved checkpoints (a few pages of log each) between two nudges.
pub(super) const NUDGE_EVERY: usize = 256;

/// The handle of a store's checkpointer thread; the thread ends when the handle is dropped.
pub(super) struct Checkpointer {
    wake: SyncSender<()>,
    /// Checkpoints saved since the last nudge.
    saved: usize,
}

impl Checkpointer {
    /// Starts the checkpointer of the database file at `path` (the store `name`).
    pub(super) fn start(path: &Path, name: Arc<str>) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|e| error::sqlite(&name, "opening the database for checkpoints", e))?;
        // Sync the database file at checkpoints as the store's connection does, keep only a few
        // pages cached (it reads none), and never checkpoint on commit (it commits nothing).
        conn.execute_batch(
            "PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA cache_size = 16;",
        )
        .map_err(|e| error::sqlite(&name, "setting the checkpoint connection up", e))?;
        // One nudge waiting is enough: the checkpoint it starts copies whatever is in the log.
        let (wake, nudges) = mpsc::sync_channel(1);
        let store = name.clone();
        std::thread::Builder::new()
            .name("agentry-sqlite-checkpoint".into())
            .spawn(move || {
                while nudges.recv().is_ok() {
                    // A passive checkpoint gives way to readers and writers; what it leaves is
                    // copied by the next one.
                    let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    if let Err(e) = copied {
                        tracing::warn!(store = %store, error = %e, "a background WAL checkpoint failed; the next one retries");
                    }
                }
            })
            .map_err(|e| {
                StoreError::backend(
                    &*name,
                    format!(
                        "cannot start the store's checkpoint thread ({e}); the system is out of \
                         threads"
                    ),
                )
            })?;
        Ok(Checkpointer { wake, saved: 0 })
    }

    /// Counts `n` more saved checkpoints, and nudges the thread every [`NUDGE_EVERY`].
    pub(super) fn saved(&mut self, n: usize) {
        self.saved += n;
        if self.saved >= NUDGE_EVERY {
            self.saved = 0;
            // Full: a nudge is already waiting. Disconnected: the thread panicked, and the
            // store's own connection checkpoints past its threshold instead.
            let _ = self.wake.try_send(());
        }
    }
}
