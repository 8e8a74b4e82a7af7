//! The stored form of a snapshot: everything but its messages, which live in the run's message
//! log, plus the layout that says where they are. Shared by every store that keeps a log.

use super::log::LogLayout;
use crate::{History, RunSnapshot};
use serde::{Deserialize, Serialize};

/// A snapshot's record as written: the snapshot without its messages, and their layout over the
/// run's message log (a store writes the messages once each, into the log). Serialize it into
/// the store's record column, or as part of a larger write.
#[derive(Serialize)]
pub struct SnapshotRecord<'a> {
    #[serde(flatten)]
    head: RunSnapshot,
    log: &'a LogLayout,
}

impl<'a> SnapshotRecord<'a> {
    /// The record of `snapshot`, whose history lies in the log as `layout` says.
    pub fn new(snapshot: &RunSnapshot, layout: &'a LogLayout) -> Self {
        SnapshotRecord {
            head: RunSnapshot {
                messages: History::new(),
                ..snapshot.clone()
            },
            log: layout,
        }
    }

    /// The record as JSON text.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string(self).map_err(|e| {
            format!(
                "its snapshot cannot be written as JSON ({e}); check the values its state and \
                 metadata hold"
            )
        })
    }
}

/// A record as read: a snapshot with its messages inline (the form stores wrote before histories
/// were logged) or with a layout over the log.
#[derive(Deserialize)]
struct RecordIn {
    #[serde(flatten)]
    head: RunSnapshot,
    #[serde(default)]
    log: Option<LogLayout>,
}

/// A record read back: the snapshot (its messages still to be filled in from the log when
/// `layout` is `Some`) and the layout.
pub fn parse_record(json: &str) -> Result<(RunSnapshot, Option<LogLayout>), String> {
    let record: RecordIn =
        serde_json::from_str(json).map_err(|e| format!("its snapshot does not parse: {e}"))?;
    Ok((record.head, record.log))
}
