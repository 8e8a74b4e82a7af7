//! Where runs are checkpointed: the `RunStore` trait and an in-memory store.

use crate::RunSnapshot;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A store failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("run store `{store}` failed: {message}")]
pub struct StoreError {
    /// The store.
    pub store: String,
    /// What went wrong and what to do.
    pub message: String,
}

/// Persists run snapshots. The runtime saves one after every step when a store is configured.
pub trait RunStore: Send + Sync + 'static {
    /// Saves (or replaces) the snapshot of a run.
    fn save<'a>(
        &'a self,
        snapshot: &'a crate::RunSnapshot,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Loads the last snapshot of a run.
    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RunSnapshot>, StoreError>>;
}

/// A store in memory, for tests and single-process use. Clones share the same runs.
///
/// ```
/// # tokio_test_block(async {
/// use agentry_core::{MemoryStore, RunStore};
/// let store = MemoryStore::new();
/// assert!(store.load("nope").await.unwrap().is_none());
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     futures::executor::block_on(f)
/// # }
/// ```
#[derive(Clone, Default)]
pub struct MemoryStore {
    runs: Arc<Mutex<HashMap<String, RunSnapshot>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
    /// The ids of the runs it holds.
    pub fn run_ids(&self) -> Vec<String> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

impl RunStore for MemoryStore {
    fn save<'a>(&'a self, snapshot: &'a RunSnapshot) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.insert(snapshot.run_id.clone(), snapshot.clone());
        Box::pin(async { Ok(()) })
    }
    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RunSnapshot>, StoreError>> {
        let found = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(run_id)
            .cloned();
        Box::pin(async move { Ok(found) })
    }
}
