//! The worker's restored run scopes: each run's run-scope hooks and tool sources that are data
//! (`RunOptions::with_stored`, `RunOptions::with_stored_tools`: a command hook's settings, MCP
//! servers), built once per run on a worker rather than once per activity, so a persistent hook
//! process or an MCP server lives as long as the run does there.

use agentry::Runtime;
use agentry::effects::StoredScope;
use agentry::hooks::HookSpecRecord;
use std::collections::HashMap;
use std::sync::Mutex;

/// The restored scopes of the runs a worker ran activities of lately, at most `capacity` runs
/// (the least recently used are dropped first, and built again if their runs come back).
pub struct ScopeCache {
    /// Each run's scope and when it was last used, and the clock.
    entries: Mutex<(HashMap<String, Entry>, u64)>,
    capacity: usize,
}

/// A run's scope and when it was last used.
type Entry = (StoredScope, u64);

impl ScopeCache {
    /// A cache of at most `capacity` runs' scopes.
    pub fn new(capacity: usize) -> Self {
        ScopeCache {
            entries: Mutex::new((HashMap::new(), 0)),
            capacity: capacity.max(1),
        }
    }

    /// Run `run_id`'s scope, built from `records` with `runtime`'s restorers the first time (or
    /// again when its records changed).
    ///
    /// # Errors
    /// A record the runtime cannot build: the message says which, and how to fix it.
    pub fn scope(
        &self,
        run_id: &str,
        records: &[HookSpecRecord],
        runtime: &Runtime,
    ) -> Result<StoredScope, agentry::Error> {
        {
            let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let (entries, clock) = &mut *guard;
            *clock += 1;
            if let Some((scope, used)) = entries.get_mut(run_id)
                && scope.records == records
            {
                *used = *clock;
                return Ok(scope.clone());
            }
        }
        // Built outside the lock: building may start what the hooks need.
        let scope = runtime.restore_scope(records)?;
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, clock) = &mut *guard;
        *clock += 1;
        entries.insert(run_id.to_string(), (scope.clone(), *clock));
        if entries.len() > self.capacity
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        Ok(scope)
    }

    /// Drops `run_id`'s scope (its run ended).
    pub fn forget(&self, run_id: &str) {
        let mut guard = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.remove(run_id);
    }
}
