//! A run's history as activities receive it: a delta, not a copy.
//!
//! Shipping the whole history into every activity makes a step cost more the longer the run
//! (and a long run's inputs outgrow Temporal's payload limit). Instead the workflow sends what
//! changed since the last activity ended ([`HistoryDelta`]): a worker completes it from the
//! history it keeps per run ([`crate::cache::HistoryCache`]), or, when it does not have the
//! run (another worker ran its last activity, it restarted), asks the workflow for the whole
//! history with a query. Either way the history it runs with is checked against the digest the
//! workflow sent, so an activity never runs on a history the workflow does not have.
//!
//! The digest is FNV-1a over each message's JSON, folded message by message: stable across
//! processes and builds, cheap to extend by one message, and computed the same way on both
//! sides ([`Digests`]).

use agentry_core::{History, Message};
use serde::{Deserialize, Serialize};

/// The digest of an empty history.
const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// Folds `message` into the digest `digest` of the messages before it.
fn fold(digest: u64, message: &Message) -> u64 {
    // A message that does not serialize cannot travel to an activity either; its digest is
    // the fold of nothing, so a history holding one never matches a cached copy.
    let bytes = serde_json::to_vec(message).unwrap_or_default();
    let mut d = digest ^ (bytes.len() as u64);
    d = d.wrapping_mul(PRIME);
    for b in bytes {
        d ^= u64::from(b);
        d = d.wrapping_mul(PRIME);
    }
    d
}

/// The digests of every prefix of a history: `at(n)` is the digest of its first `n` messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Digests(Vec<u64>);

impl Default for Digests {
    fn default() -> Self {
        Digests(vec![SEED])
    }
}

impl Digests {
    /// The digests of `history`'s prefixes.
    pub(crate) fn of(history: &History) -> Self {
        let mut d = Digests::default();
        d.extend(history);
        d
    }

    /// How many messages the digests cover.
    pub(crate) fn len(&self) -> usize {
        self.0.len() - 1
    }

    /// The digest of the first `n` messages, if they are covered.
    pub(crate) fn at(&self, n: usize) -> Option<u64> {
        self.0.get(n).copied()
    }

    /// The digest of all the messages covered.
    pub(crate) fn last(&self) -> u64 {
        *self.0.last().expect("the empty prefix is always covered")
    }

    /// Covers the messages of `history` past those already covered (`history` extends the
    /// history covered so far).
    pub(crate) fn extend(&mut self, history: &History) {
        for message in history.iter().skip(self.len()) {
            let next = fold(self.last(), message);
            self.0.push(next);
        }
    }

    /// Covers only the first `n` messages.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.0.truncate(n + 1);
    }
}

/// A run's history as an activity receives it: the messages added since the history an
/// earlier activity of the run left (its `base` first messages), and digests to check the
/// whole against.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct HistoryDelta {
    /// How many messages the history has.
    pub len: usize,
    /// The digest of the whole history.
    pub digest: u64,
    /// How many messages the delta leaves out: those an earlier activity's worker has.
    pub base: usize,
    /// The digest of the first `base` messages.
    pub base_digest: u64,
    /// The messages from `base` on.
    pub tail: Vec<Message>,
}

/// The workflow's side: the digests of its history and where the last activity left it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ledger {
    digests: Digests,
    synced: usize,
}

impl Ledger {
    /// A ledger of `history`, the first `synced` messages of which the last activity left.
    pub(crate) fn resumed(history: &History, synced: usize) -> Self {
        Ledger {
            digests: Digests::of(history),
            synced: synced.min(history.len()),
        }
    }

    /// How many messages of the history the last activity left (the base of the next delta).
    pub(crate) fn synced(&self) -> usize {
        self.synced
    }

    /// The delta that gives an activity `history`.
    pub(crate) fn delta(&mut self, history: &History) -> HistoryDelta {
        self.digests.extend(history);
        let base = self.synced.min(history.len());
        HistoryDelta {
            len: history.len(),
            digest: self.digests.last(),
            base,
            base_digest: self.digests.at(base).unwrap_or_default(),
            tail: history.iter().skip(base).cloned().collect(),
        }
    }

    /// Notes that the history was rewritten from message `start` on (a compaction folded
    /// messages there): what was digested or synced past it no longer holds.
    pub(crate) fn rewound(&mut self, start: usize) {
        self.digests.truncate(start);
        self.synced = self.synced.min(start);
    }

    /// Notes that an activity ended and its worker keeps `history` as the run's (the history
    /// once the workflow applied what the activity returned).
    pub(crate) fn sync(&mut self, history: &History) {
        self.sync_upto(history, history.len());
    }

    /// Notes that an activity ended and its worker keeps the first `n` messages of `history`
    /// (the workflow added the others itself).
    pub(crate) fn sync_upto(&mut self, history: &History, n: usize) {
        self.digests.extend(history);
        self.synced = n.min(history.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(texts: &[&str]) -> History {
        let mut h = History::new();
        for t in texts {
            h.push(Message::user(*t));
        }
        h
    }

    #[test]
    fn digests_depend_on_every_message_and_its_place() {
        let a = Digests::of(&history(&["a", "b"]));
        let b = Digests::of(&history(&["b", "a"]));
        let c = Digests::of(&history(&["a", "b", "c"]));
        assert_ne!(a.last(), b.last());
        assert_eq!(a.at(2), c.at(2));
        assert_ne!(c.last(), a.last());
        assert_eq!(Digests::of(&History::new()).last(), SEED);
    }

    #[test]
    fn a_delta_carries_what_was_added_since_the_last_activity() {
        let mut h = history(&["a", "b"]);
        let mut ledger = Ledger::default();
        let first = ledger.delta(&h);
        assert_eq!((first.base, first.tail.len()), (0, 2));
        ledger.sync(&h);
        h.push(Message::user("c"));
        let next = ledger.delta(&h);
        assert_eq!((next.base, next.len, next.tail.len()), (2, 3, 1));
        assert_eq!(next.base_digest, Digests::of(&history(&["a", "b"])).last());
        assert_eq!(next.digest, Digests::of(&h).last());
    }
}
