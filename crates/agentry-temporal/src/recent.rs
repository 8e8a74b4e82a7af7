//! What a worker keeps of the runs it ran activities of lately, by run id: at most a given
//! number of runs, the least recently used dropped first.

use std::collections::HashMap;

/// Values by run id, at most `capacity` of them.
pub(crate) struct Recent<V> {
    /// Each run's value and when it was last used.
    entries: HashMap<String, (V, u64)>,
    clock: u64,
    capacity: usize,
}

impl<V> Recent<V> {
    /// Room for `capacity` runs (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Recent {
            entries: HashMap::new(),
            clock: 0,
            capacity: capacity.max(1),
        }
    }

    /// Run `run_id`'s value, now the most recently used.
    pub(crate) fn get_mut(&mut self, run_id: &str) -> Option<&mut V> {
        self.clock += 1;
        let (value, used) = self.entries.get_mut(run_id)?;
        *used = self.clock;
        Some(value)
    }

    /// Keeps `value` as run `run_id`'s, dropping the least recently used run past the capacity.
    pub(crate) fn insert(&mut self, run_id: &str, value: V) {
        self.clock += 1;
        self.entries.insert(run_id.to_string(), (value, self.clock));
        if self.entries.len() > self.capacity
            && let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
    }

    /// Drops run `run_id`'s value.
    pub(crate) fn remove(&mut self, run_id: &str) {
        self.entries.remove(run_id);
    }
}
