//! Stored event rows read back as a store reads them (`seq`, `at_ms`, `kind`, `data`), and the
//! run events they record.
//!
//! Input: lines, each a stored event as JSON.

use agentry::{RunEvent, StoredEvent};

/// Reads each line of `data` as a stored event; panics if a run event it records does not
/// record back the same.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let Ok(stored) = serde_json::from_str::<StoredEvent>(line) else {
            continue;
        };
        let Ok(event) = RunEvent::from_recorded(&stored.event) else {
            continue;
        };
        let _ = event.agent_path();
        let _ = event.with_media_references();
        if let Some(recorded) = event.to_recorded() {
            assert_eq!(recorded.kind, event.kind());
            let again = RunEvent::from_recorded(&recorded)
                .unwrap_or_else(|e| panic!("a recorded {} does not read back: {e}", event.kind()));
            assert_eq!(again, event);
        }
    }
}
