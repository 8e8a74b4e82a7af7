//! What the proxy counts: connections accepted, requests matched, faults injected.

use crate::Fault;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One fault the proxy injected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// The index of the connection it was injected on (0 for the first accepted).
    pub connection: usize,
    /// The plan's index it came from: the connection's index, or, for a plan scoped to
    /// requests, the index of the matching request.
    pub index: usize,
    /// The fault.
    pub fault: Fault,
}

/// The proxy's counters, shared by its connections.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    connections: AtomicUsize,
    matched: AtomicUsize,
    injected: Mutex<Vec<Injected>>,
}

impl Stats {
    /// Counts a new connection; returns its index.
    pub(crate) fn next_connection(&self) -> usize {
        self.connections.fetch_add(1, Ordering::AcqRel)
    }

    /// Counts a request that matched a request-scoped plan; returns its index.
    pub(crate) fn next_match(&self) -> usize {
        self.matched.fetch_add(1, Ordering::AcqRel)
    }

    /// Records an injected fault.
    pub(crate) fn injected(&self, connection: usize, index: usize, fault: &Fault) {
        self.injected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Injected {
                connection,
                index,
                fault: fault.clone(),
            });
    }

    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    pub(crate) fn matched(&self) -> usize {
        self.matched.load(Ordering::Acquire)
    }

    pub(crate) fn all_injected(&self) -> Vec<Injected> {
        self.injected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
