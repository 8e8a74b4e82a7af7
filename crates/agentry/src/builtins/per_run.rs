//! State a built-in hook keeps for each run it sees, forgotten when the run ends.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// A hook's state by run id. A hook attached to a runtime sees many runs at once (sub-agent
/// runs among them); each gets its entry at RunStart (or first use) and loses it at RunEnd or
/// RunFailed through [`forget`](Self::forget).
pub(crate) struct PerRun<T>(Mutex<HashMap<String, T>>);

impl<T> Default for PerRun<T> {
    fn default() -> Self {
        PerRun(Mutex::default())
    }
}

impl<T> PerRun<T> {
    /// The map; a panic elsewhere while it was held does not make it unusable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, T>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops the state of `run` (and returns it).
    pub(crate) fn forget(&self, run: &str) -> Option<T> {
        self.lock().remove(run)
    }
}
