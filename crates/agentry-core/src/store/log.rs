//! A run's messages as an append-only log: what a checkpoint adds to it, and where the history
//! lies in it.
//!
//! A store keeps every message a run ever had once, at a fixed position in the run's log, and a
//! checkpoint writes only the messages added since the previous one. The history itself is a
//! list of [`LogSpan`]s over the log: one span for a run whose history only grew, a few more
//! once a compaction folded older messages into a summary (the summary is appended; the kept
//! messages keep their positions). So a checkpoint costs the same at step 10 and step 10,000.

use super::StoredRun;
use crate::{History, Message};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// `len` consecutive messages of a run's log, from position `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogSpan {
    /// The position of the first message (from 0).
    pub start: u64,
    /// How many messages.
    pub len: u64,
}

/// Where a run's history lies in its message log: the spans that make up the history, in order,
/// and the log's length.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLayout {
    /// The history, as spans of log positions.
    pub spans: Vec<LogSpan>,
    /// The number of messages in the log: the position of the next one appended.
    pub next: u64,
}

impl LogLayout {
    /// The number of messages in the history.
    pub fn history_len(&self) -> u64 {
        self.spans.iter().map(|s| s.len).sum()
    }

    /// The log positions of the history's messages, in order.
    pub fn positions(&self) -> impl Iterator<Item = u64> + '_ {
        self.spans.iter().flat_map(|s| s.start..s.start + s.len)
    }

    /// Appends the message at log position `pos` to the history.
    fn push(&mut self, pos: u64) {
        match self.spans.last_mut() {
            Some(last) if last.start + last.len == pos => last.len += 1,
            _ => self.spans.push(LogSpan { start: pos, len: 1 }),
        }
    }
}

/// What a checkpoint adds to a run's message log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogAppend {
    /// The messages appended, at positions `layout.next - appended.len()` onwards.
    pub appended: Vec<Arc<Message>>,
    /// The layout after the checkpoint.
    pub layout: LogLayout,
    /// The run's revision in the store that the checkpoint follows ([`Checkpoint::revision`]).
    ///
    /// [`Checkpoint::revision`]: super::Checkpoint::revision
    pub revision: u64,
}

impl LogAppend {
    /// The log position of the first appended message.
    pub fn first(&self) -> u64 {
        self.layout.next - self.appended.len() as u64
    }
}

/// Tracks what of a run's history its store holds, so each checkpoint writes only what was
/// added, and follows the revision the last one left. Runtimes keep one per durable run.
///
/// A checkpoint is first [handed over](Self::handed) (the store may write it later, in order),
/// then known [written](Self::written) or [failed](Self::failed). The next checkpoint is built on
/// the last one handed over, so checkpoints can be pipelined; when one fails, the log goes back
/// to the last one written, and the store refuses the checkpoints handed over after the failed
/// one (they follow a revision it never reached), so what it holds is always a checkpoint whole.
///
/// ```
/// use agentry_core::store::MessageLog;
/// use agentry_core::{History, Message};
///
/// let mut log = MessageLog::new();
/// let mut history = History::new();
/// history.push(Message::user("hi"));
/// history.push(Message::assistant("hello"));
/// let first = log.append(&history);
/// assert_eq!((first.appended.len(), first.layout.next, first.revision), (2, 2, 0));
/// log.saved(history.clone(), first.layout);
///
/// history.push(Message::user("and now?"));
/// let second = log.append(&history);
/// assert_eq!(second.appended.len(), 1);       // only what was added
/// assert_eq!(second.first(), 2);
/// assert_eq!(second.layout.spans.len(), 1);   // the history is log[0..3]
/// assert_eq!(second.revision, 1);             // it follows the first checkpoint
///
/// // Handed over, then failed: the next checkpoint is built on the first one again.
/// log.handed(history.clone(), second.layout.clone());
/// log.failed();
/// assert_eq!(log.append(&history), second);
/// ```
#[derive(Clone, Debug, Default)]
pub struct MessageLog {
    /// As of the last checkpoint known written.
    written: LogState,
    /// The checkpoints handed over since, whose outcome is not known yet, oldest first.
    handed: VecDeque<LogState>,
}

/// The history as of one checkpoint, its layout in the log, and the run's revision after it.
#[derive(Clone, Debug, Default)]
struct LogState {
    history: History,
    layout: LogLayout,
    revision: u64,
}

impl MessageLog {
    /// The log of a new run: nothing saved yet.
    pub fn new() -> Self {
        MessageLog::default()
    }

    /// The log of a run loaded from a store at `revision`: `history` lies in the log as `layout`
    /// says. (A run stored before histories were logged has an empty layout and an empty
    /// history here, so its first checkpoint writes the whole history into the log.)
    pub fn resumed(history: History, layout: LogLayout, revision: u64) -> Self {
        MessageLog {
            written: LogState {
                history,
                layout,
                revision,
            },
            handed: VecDeque::new(),
        }
    }

    /// The log of a run as [`RunStore::load`](super::RunStore::load) returned it: its history,
    /// layout and revision (a run stored before histories were logged: nothing logged yet, so
    /// its first checkpoint writes its whole history, after its stored revision).
    pub fn of_stored(stored: &StoredRun) -> Self {
        match &stored.layout {
            Some(layout) => MessageLog::resumed(
                stored.snapshot.messages.clone(),
                layout.clone(),
                stored.revision,
            ),
            None => MessageLog::resumed(History::new(), LogLayout::default(), stored.revision),
        }
    }

    /// The last checkpoint handed over (or written, when none is outstanding).
    fn last(&self) -> &LogState {
        self.handed.back().unwrap_or(&self.written)
    }

    /// The layout as of the last checkpoint handed over.
    pub fn layout(&self) -> &LogLayout {
        &self.last().layout
    }

    /// The revision the next checkpoint follows.
    pub fn revision(&self) -> u64 {
        self.last().revision
    }

    /// How many checkpoints were handed over whose outcome is not known yet.
    pub fn outstanding(&self) -> usize {
        self.handed.len()
    }

    /// What a checkpoint of `history` adds to the log, after the last one handed over. A
    /// history that only grew since costs what it added; one that was rewritten (compacted,
    /// replaced) is matched message by message against the saved one, and only messages the log
    /// does not hold are appended.
    pub fn append(&self, history: &History) -> LogAppend {
        let LogState {
            history: saved,
            layout: saved_layout,
            revision,
        } = self.last();
        let revision = *revision;
        let saved_len = saved.len();
        let only_grew = history.edits() == saved.edits()
            && history.len() >= saved_len
            && (saved_len == 0
                || matches!(
                    (history.get_shared(saved_len - 1), saved.get_shared(saved_len - 1)),
                    (Some(a), Some(b)) if Arc::ptr_eq(a, b)
                ))
            && saved_layout.history_len() == saved_len as u64;
        let mut layout = saved_layout.clone();
        let mut appended = Vec::new();
        if only_grew {
            // By index: skipping an iterator over the history would walk the saved part.
            for message in (saved_len..history.len()).filter_map(|i| history.get_shared(i)) {
                layout.push(layout.next);
                layout.next += 1;
                appended.push(message.clone());
            }
            return LogAppend {
                appended,
                layout,
                revision,
            };
        }
        // Rewritten: keep the positions of the messages the log already holds.
        let known: HashMap<*const Message, u64> = saved
            .iter_shared()
            .zip(saved_layout.positions())
            .map(|(m, pos)| (Arc::as_ptr(m), pos))
            .collect();
        layout.spans.clear();
        for message in history.iter_shared() {
            match known.get(&Arc::as_ptr(message)) {
                Some(&pos) => layout.push(pos),
                None => {
                    layout.push(layout.next);
                    layout.next += 1;
                    appended.push(message.clone());
                }
            }
        }
        LogAppend {
            appended,
            layout,
            revision,
        }
    }

    /// Records that a checkpoint of `history` with `layout` (from [`append`](Self::append)) was
    /// handed over to the store, which has not said yet whether it wrote it.
    pub fn handed(&mut self, history: History, layout: LogLayout) {
        let revision = self.revision() + 1;
        self.handed.push_back(LogState {
            history,
            layout,
            revision,
        });
    }

    /// Records that the oldest checkpoint handed over and not known written was written.
    pub fn written(&mut self) {
        if let Some(state) = self.handed.pop_front() {
            self.written = state;
        }
    }

    /// Records that the checkpoints handed over and not known written were not (the oldest
    /// failed; the store refuses the later ones): the next checkpoint is built on the last one
    /// written.
    pub fn failed(&mut self) {
        self.handed.clear();
    }

    /// Records that a checkpoint of `history` with `layout` was handed over and written (after
    /// the store accepted it).
    pub fn saved(&mut self, history: History, layout: LogLayout) {
        self.handed(history, layout);
        self.written();
    }
}

/// Rebuilds a history from its layout and the log's messages by position.
///
/// Returns the first position the layout names that `messages` lacks, as an error.
pub fn history_from_log(
    layout: &LogLayout,
    messages: &HashMap<u64, Arc<Message>>,
) -> Result<History, u64> {
    let mut history = History::new();
    for pos in layout.positions() {
        history.push(messages.get(&pos).cloned().ok_or(pos)?);
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(h: &History) -> Vec<String> {
        h.iter().map(|m| m.text().to_string()).collect()
    }

    #[test]
    fn a_growing_history_appends_only_what_was_added() {
        let mut log = MessageLog::new();
        let mut h = History::new();
        for i in 0..5 {
            h.push(Message::user(format!("m{i}")));
            let a = log.append(&h);
            assert_eq!(a.appended.len(), 1);
            assert_eq!(a.first(), i);
            assert_eq!(
                a.layout.spans,
                [LogSpan {
                    start: 0,
                    len: i + 1
                }]
            );
            log.saved(h.clone(), a.layout);
        }
    }

    #[test]
    fn a_compacted_history_keeps_positions_and_appends_the_summary() {
        let mut log = MessageLog::new();
        let mut h: History = (0..6).map(|i| Message::user(format!("m{i}"))).collect();
        let a = log.append(&h);
        log.saved(h.clone(), a.layout);
        // Fold m1..m4 into one summary (one message replaced by one, too: the edit count tells).
        h.replace_range(1, 4, Message::user("summary"));
        h.push(Message::user("m6"));
        let a = log.append(&h);
        assert_eq!(
            a.appended.iter().map(|m| m.text()).collect::<Vec<_>>(),
            ["summary", "m6"]
        );
        assert_eq!(
            a.layout.spans,
            [
                LogSpan { start: 0, len: 1 },
                LogSpan { start: 6, len: 1 },
                LogSpan { start: 4, len: 2 },
                LogSpan { start: 7, len: 1 },
            ]
        );
        let mut by_pos = HashMap::new();
        let all: Vec<Arc<Message>> = (0..6)
            .map(|i| Arc::new(Message::user(format!("m{i}"))))
            .chain(a.appended.iter().cloned())
            .collect();
        for (pos, m) in all.into_iter().enumerate() {
            by_pos.insert(pos as u64, m);
        }
        let rebuilt = history_from_log(&a.layout, &by_pos).unwrap();
        assert_eq!(texts(&rebuilt), ["m0", "summary", "m4", "m5", "m6"]);
        assert_eq!(texts(&rebuilt), texts(&h));
    }

    #[test]
    fn a_replaced_history_is_written_whole() {
        let mut log = MessageLog::new();
        let h: History = (0..3).map(|i| Message::user(format!("m{i}"))).collect();
        let a = log.append(&h);
        log.saved(h, a.layout);
        let other: History = (0..4).map(|i| Message::user(format!("o{i}"))).collect();
        let a = log.append(&other);
        assert_eq!(a.appended.len(), 4);
        assert_eq!(a.layout.spans, [LogSpan { start: 3, len: 4 }]);
    }

    #[test]
    fn a_failed_checkpoint_takes_the_log_back_to_the_last_one_written() {
        let mut log = MessageLog::resumed(History::new(), LogLayout::default(), 7);
        let mut h = History::new();
        h.push(Message::user("m0"));
        let a = log.append(&h);
        assert_eq!((a.revision, a.first()), (7, 0));
        log.handed(h.clone(), a.layout.clone());
        // Pipelined: the next checkpoint is built on the one handed over.
        h.push(Message::user("m1"));
        let b = log.append(&h);
        assert_eq!((b.revision, b.first(), b.appended.len()), (8, 1, 1));
        log.handed(h.clone(), b.layout.clone());
        assert_eq!((log.outstanding(), log.revision()), (2, 9));

        // The first fails: everything handed over is rebuilt from the last one written.
        log.failed();
        assert_eq!((log.outstanding(), log.revision()), (0, 7));
        let again = log.append(&h);
        assert_eq!(
            (again.revision, again.first(), again.appended.len()),
            (7, 0, 2)
        );

        // The first is written, the second fails: rebuilt from the first.
        log.handed(h.clone(), again.layout.clone());
        h.push(Message::user("m2"));
        let c = log.append(&h);
        log.handed(h.clone(), c.layout.clone());
        log.written();
        log.failed();
        assert_eq!(log.append(&h), c);
        assert_eq!(log.revision(), 8);
    }

    #[test]
    fn a_missing_position_is_reported() {
        let layout = LogLayout {
            spans: vec![LogSpan { start: 0, len: 2 }],
            next: 2,
        };
        let mut by_pos = HashMap::new();
        by_pos.insert(0, Arc::new(Message::user("a")));
        assert_eq!(history_from_log(&layout, &by_pos), Err(1));
    }
}
