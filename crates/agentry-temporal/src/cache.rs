//! The worker's side of history deltas ([`crate::ledger`]): the history of each run whose
//! activities it ran lately, by run id, with the digests of its prefixes.

use crate::ledger::{Digests, HistoryDelta};
use crate::recent::Recent;
use agentry_core::{History, Message};
use std::sync::{Arc, Mutex};

/// One run's history as a worker's last activity of it left it.
struct Entry {
    history: History,
    digests: Digests,
}

/// The histories of the runs a worker ran activities of lately, at most `capacity` runs (the
/// least recently used are forgotten first).
pub(crate) struct HistoryCache {
    entries: Mutex<Recent<Entry>>,
}

/// A history with the digests of its prefixes.
pub(crate) struct Checked {
    /// The history.
    pub history: History,
    /// Its digests.
    pub digests: Digests,
}

impl Checked {
    /// The empty history.
    pub(crate) fn empty() -> Self {
        Checked {
            history: History::new(),
            digests: Digests::default(),
        }
    }
}

impl HistoryCache {
    /// A cache of at most `capacity` runs' histories.
    pub(crate) fn new(capacity: usize) -> Self {
        HistoryCache {
            entries: Mutex::new(Recent::new(capacity)),
        }
    }

    /// The history `delta` describes, from the cached history of `run_id` and the delta's
    /// tail; `None` when the cache does not have the delta's base, or the result does not
    /// match the delta's digest.
    pub(crate) fn complete(&self, run_id: &str, delta: &HistoryDelta) -> Option<Checked> {
        let (mut history, mut digests) = {
            match self.lock().get_mut(run_id) {
                Some(entry) if entry.digests.at(delta.base) == Some(delta.base_digest) => {
                    (entry.history.clone(), entry.digests.clone())
                }
                // A delta based on nothing is the whole history.
                _ if delta.base == 0 => (History::new(), Digests::default()),
                _ => return None,
            }
        };
        history.truncate(delta.base);
        digests.truncate(delta.base);
        for message in &delta.tail {
            history.push(message.clone());
        }
        digests.extend(&history);
        (history.len() == delta.len && digests.last() == delta.digest)
            .then_some(Checked { history, digests })
    }

    /// Checks `messages` (the whole history, from the workflow) against `delta`.
    pub(crate) fn check(messages: Vec<Message>, delta: &HistoryDelta) -> Option<Checked> {
        let mut history = History::new();
        for message in messages {
            history.push(message);
        }
        let digests = Digests::of(&history);
        (history.len() == delta.len && digests.last() == delta.digest)
            .then_some(Checked { history, digests })
    }

    /// Keeps `history` as `run_id`'s: `given` (with its digests) extended by what an activity
    /// appended.
    pub(crate) fn store(&self, run_id: &str, given: Checked, history: &History) {
        let mut digests = given.digests;
        let extends = history.len() >= given.history.len()
            && given
                .history
                .iter_shared()
                .zip(history.iter_shared())
                .all(|(a, b)| Arc::ptr_eq(a, b) || a == b);
        if !extends {
            digests = Digests::default();
        }
        digests.extend(history);
        let entry = Entry {
            history: history.clone(),
            digests,
        };
        self.lock().insert(run_id, entry);
    }

    /// Forgets `run_id`'s history (its run ended, or continues as a new execution).
    pub(crate) fn forget(&self, run_id: &str) {
        self.lock().remove(run_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recent<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Ledger;

    #[test]
    fn a_worker_completes_deltas_from_its_cache_and_misses_what_it_lacks() {
        let cache = HistoryCache::new(2);
        let mut h = History::new();
        h.push(Message::user("a"));
        let mut ledger = Ledger::default();
        let first = ledger.delta(&h);
        // A delta based on nothing is complete by itself.
        let given = cache.complete("r", &first).unwrap();
        assert_eq!(given.history, h);
        h.push(Message::assistant("b"));
        cache.store("r", given, &h);
        ledger.sync(&h);
        h.push(Message::user("c"));
        let next = ledger.delta(&h);
        assert_eq!(next.tail.len(), 1);
        let done = cache.complete("r", &next).unwrap();
        assert_eq!(done.history, h);
        // A run it never saw, or a history that differs from the workflow's, misses.
        assert!(cache.complete("other", &next).is_none());
        let mut wrong = next.clone();
        wrong.tail = vec![Message::user("not c")];
        assert!(cache.complete("r", &wrong).is_none());
        // A checked history that does not match the delta is refused.
        assert!(HistoryCache::check(vec![Message::user("a")], &next).is_none());
    }

    #[test]
    fn the_least_recently_used_run_is_forgotten_first() {
        let cache = HistoryCache::new(2);
        let mut h = History::new();
        h.push(Message::user("a"));
        let mut ledger = Ledger::default();
        let first = ledger.delta(&h);
        let keep = |run: &str| {
            let given = HistoryCache::check(h.iter().cloned().collect(), &first).unwrap();
            cache.store(run, given, &h);
        };
        keep("r1");
        keep("r2");
        ledger.sync(&h);
        let mut longer = h.clone();
        longer.push(Message::user("b"));
        // Based on the cached message: only a worker that has the run completes it.
        let delta = ledger.delta(&longer);
        assert_eq!(delta.base, 1);
        assert!(cache.complete("r1", &delta).is_some());
        keep("r3");
        assert!(cache.complete("r2", &delta).is_none());
        assert!(cache.complete("r1", &delta).is_some());
        assert!(cache.complete("r3", &delta).is_some());
        cache.forget("r1");
        assert!(cache.complete("r1", &delta).is_none());
    }

    #[test]
    fn a_history_folded_by_a_compaction_completes_where_it_was_folded_and_misses_elsewhere() {
        let mut h = History::new();
        for text in ["a", "b", "c", "d"] {
            h.push(Message::user(text));
        }
        let mut ledger = Ledger::default();
        let first = ledger.delta(&h);
        // Two workers have the run as it was.
        let (folder, other) = (HistoryCache::new(2), HistoryCache::new(2));
        for cache in [&folder, &other] {
            let given = cache.complete("r", &first).unwrap();
            cache.store("r", given, &h);
        }
        ledger.sync(&h);
        // One folds messages 1..3 into a summary, the workflow does the same.
        let given = folder.complete("r", &ledger.delta(&h)).unwrap();
        h.replace_range(1, 3, Message::user("summary"));
        folder.store("r", given, &h);
        ledger.rewound(1);
        ledger.sync(&h);
        h.push(Message::user("e"));
        let next = ledger.delta(&h);
        // The folding worker completes it from what it kept; the other misses (its history is
        // not the run's) and asks the workflow, whose history checks.
        assert_eq!(folder.complete("r", &next).unwrap().history, h);
        assert!(other.complete("r", &next).is_none());
        let asked = HistoryCache::check(h.iter().cloned().collect(), &next).unwrap();
        assert_eq!(asked.history, h);
    }
}
