//! The conformance suite against `MemoryStore`, the reference the other stores are held to.

#[macro_use]
mod conformance;

use agentry_core::MemoryStore;
use conformance::Stores;

async fn open() -> Option<Stores> {
    let store = MemoryStore::new();
    Some(Stores {
        other: Box::new(store.clone()),
        store: Box::new(store),
        _cleanup: None,
    })
}

conformance_tests!(open());
