//! The conformance suite against `MemoryStore`, the reference the other stores are held to.

use crate::conformance::Stores;
use agentry_core::MemoryStore;

async fn open() -> Option<Stores> {
    let store = MemoryStore::new();
    Some(Stores {
        other: Box::new(store.clone()),
        store: Box::new(store),
        _cleanup: None,
    })
}

conformance_tests!(open());
