//! A stored run read back as a store reads it: the snapshot record (a snapshot with its messages
//! inline, as stores wrote it before histories were logged, or with the layout of its history
//! over the message log), the log's messages by position, their media, the history rebuilt from
//! the layout, and the message log a runtime resumes it with.
//!
//! Input: lines; the first is the record, each other line the message at the next log position
//! (from 0).

use agentry::store::record::{SnapshotRecord, parse_record};
use agentry::store::{attach_media, detach_media, history_from_log, missing_blobs};
use agentry::{Message, MessageLog, StoredRun};
use std::collections::HashMap;
use std::sync::Arc;

/// Reads the run `data` describes; panics if what a store writes of it does not read back the
/// same.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let record = lines.next().unwrap_or_default();
    let mut by_pos = HashMap::new();
    for (pos, line) in lines.enumerate() {
        if let Ok(message) = serde_json::from_str::<Message>(line) {
            media_round_trip(&message);
            by_pos.insert(pos as u64, Arc::new(message));
        }
    }
    let Ok((mut snapshot, layout)) = parse_record(record) else {
        return;
    };
    let _ = snapshot.status();
    let _ = snapshot.unsettled_calls();
    if let Some(layout) = &layout {
        let written = SnapshotRecord::new(&snapshot, layout)
            .to_json()
            .expect("a record read back can be written again");
        let (again, again_layout) = parse_record(&written).expect("a written record reads back");
        assert_eq!(again_layout.as_ref(), Some(layout));
        assert_eq!(again.run_id, snapshot.run_id);
        assert_eq!(again.pending_tool_calls, snapshot.pending_tool_calls);
        assert_eq!(again.settled_results, snapshot.settled_results);
        match history_from_log(layout, &by_pos) {
            Ok(history) => snapshot.messages = history,
            Err(_missing) => return,
        }
    }
    let stored = StoredRun {
        snapshot,
        lease: 0,
        revision: 1,
        lease_expires_ms: 0,
        layout,
    };
    let log = MessageLog::of_stored(&stored);
    let _ = log.append(&stored.snapshot.messages);
}

/// A message written as a store writes it (media by reference, their bytes kept apart), read
/// back and given its bytes again, is the message.
fn media_round_trip(message: &Message) {
    if !missing_blobs([message]).is_empty() {
        return;
    }
    let messages = [Arc::new(message.clone())];
    let (detached, blobs) = detach_media(&messages);
    let written = serde_json::to_string(&*detached[0]).expect("a message read back is written");
    let mut read: Message = serde_json::from_str(&written).expect("a written message reads back");
    let found = blobs.into_iter().map(|b| (b.digest(), b)).collect();
    attach_media(&mut read, &found).expect("every blob a message names was kept");
    assert_eq!(&read, message, "written as {written}");
}
