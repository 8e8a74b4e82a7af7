//! The worker's restored run scopes: each run's run-scope hooks and tool sources that are data
//! (`RunOptions::with_stored`, `RunOptions::with_stored_tools`: a command hook's settings, MCP
//! servers), built once per run on a worker rather than once per activity, so a persistent hook
//! process or an MCP server lives as long as the run does there.

use crate::recent::Recent;
use agentry_core::hooks::HookSpecRecord;
use agentry_runtime::Runtime;
use agentry_runtime::effects::StoredScope;
use std::sync::Mutex;

/// The restored scopes of the runs a worker ran activities of lately, at most `capacity` runs
/// (the least recently used are dropped first, and built again if their runs come back).
pub(crate) struct ScopeCache {
    scopes: Mutex<Recent<StoredScope>>,
}

impl ScopeCache {
    /// A cache of at most `capacity` runs' scopes.
    pub(crate) fn new(capacity: usize) -> Self {
        ScopeCache {
            scopes: Mutex::new(Recent::new(capacity)),
        }
    }

    /// Run `run_id`'s scope, built from `records` with `runtime`'s restorers the first time (or
    /// again when its records changed).
    ///
    /// # Errors
    /// A record the runtime cannot build: the message says which, and how to fix it.
    pub(crate) fn scope(
        &self,
        run_id: &str,
        records: &[HookSpecRecord],
        runtime: &Runtime,
    ) -> Result<StoredScope, agentry_core::Error> {
        if let Some(scope) = self.lock().get_mut(run_id)
            && scope.records == records
        {
            return Ok(scope.clone());
        }
        // Built outside the lock: building may start what the hooks need.
        let scope = runtime.restore_scope(records)?;
        self.lock().insert(run_id, scope.clone());
        Ok(scope)
    }

    /// Drops `run_id`'s scope (its run ended).
    pub(crate) fn forget(&self, run_id: &str) {
        self.lock().remove(run_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recent<StoredScope>> {
        self.scopes.lock().unwrap_or_else(|e| e.into_inner())
    }
}
