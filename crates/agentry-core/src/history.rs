//! The shared, persistent message history of a run.

use crate::Message;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The messages of a run, shared rather than copied.
///
/// `History` is a persistent vector of `Arc<Message>`: cloning it is O(1) whatever its length, and
/// pushing to a clone never copies the messages a step already saw. The engine hands a clone to
/// every model request and hook, so a step costs the same at message 10 and at message 10,000.
///
/// ```
/// use agentry_core::{History, Message};
/// let mut h = History::new();
/// h.push(Message::user("hi"));
/// let snapshot = h.clone();          // O(1)
/// h.push(Message::assistant("hello"));
/// assert_eq!((snapshot.len(), h.len()), (1, 2));
/// assert_eq!(h.last().unwrap().text(), "hello");
/// ```
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct History {
    messages: imbl::Vector<Arc<Message>>,
    /// How many times the history was changed other than by appending (see [`History::edits`]).
    #[serde(skip)]
    edits: u64,
}

impl PartialEq for History {
    fn eq(&self, other: &History) -> bool {
        self.messages == other.messages
    }
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        History::default()
    }

    /// How many times this history was changed other than by appending to it (an insert, a
    /// removal, a replacement, a truncation). Clones carry the count, so a history whose count
    /// and length only grew since a clone was taken is that clone plus appended messages; a
    /// store's checkpoint uses this to write only what a step appended.
    pub fn edits(&self) -> u64 {
        self.edits
    }

    /// The shared handle of the message at `index`.
    pub fn get_shared(&self, index: usize) -> Option<&Arc<Message>> {
        self.messages.get(index)
    }

    /// True when both hold the same shared messages in the same order (compared by identity,
    /// so a history and its untouched clone compare in O(1) to O(n) pointer checks, never
    /// message by message).
    pub fn same_messages(&self, other: &History) -> bool {
        self.messages.len() == other.messages.len()
            && (self.messages.ptr_eq(&other.messages)
                || self
                    .messages
                    .iter()
                    .zip(other.messages.iter())
                    .all(|(a, b)| Arc::ptr_eq(a, b)))
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Appends a message.
    pub fn push(&mut self, message: impl Into<Arc<Message>>) {
        self.messages.push_back(message.into());
    }

    /// Inserts a message at `index`.
    pub fn insert(&mut self, index: usize, message: impl Into<Arc<Message>>) {
        self.edits += 1;
        self.messages.insert(index, message.into());
    }

    /// Removes and returns the message at `index`.
    pub fn remove(&mut self, index: usize) -> Arc<Message> {
        self.edits += 1;
        self.messages.remove(index)
    }

    /// Replaces the message at `index`.
    pub fn set(&mut self, index: usize, message: impl Into<Arc<Message>>) {
        self.edits += 1;
        self.messages.set(index, message.into());
    }

    /// Keeps only the messages for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&Message) -> bool) {
        self.edits += 1;
        self.messages.retain(|m| keep(m));
    }

    /// Replaces the messages `start..end` with `message`: O(log n), the other messages shared.
    ///
    /// # Panics
    /// When `start > end` or `end > len()`.
    pub fn replace_range(&mut self, start: usize, end: usize, message: impl Into<Arc<Message>>) {
        self.edits += 1;
        let mut tail = self.messages.split_off(start);
        let kept = tail.split_off(end - start);
        self.messages.push_back(message.into());
        self.messages.append(kept);
    }

    /// Drops every message from `len` on.
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            self.edits += 1;
        }
        self.messages.truncate(len);
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.messages.get(index).map(|m| &**m)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.messages.last().map(|m| &**m)
    }

    /// The first message.
    pub fn first(&self) -> Option<&Message> {
        self.messages.front().map(|m| &**m)
    }

    /// Iterates over the messages, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Message> + ExactSizeIterator {
        self.messages.iter().map(|m| &**m)
    }

    /// Iterates over the shared handles of the messages.
    pub fn iter_shared(
        &self,
    ) -> impl DoubleEndedIterator<Item = &Arc<Message>> + ExactSizeIterator {
        self.messages.iter()
    }

    /// Copies the messages into a plain vector.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }
}

impl std::ops::Index<usize> for History {
    type Output = Message;
    fn index(&self, index: usize) -> &Message {
        &self.messages[index]
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        History {
            messages: iter.into_iter().map(Arc::new).collect(),
            edits: 0,
        }
    }
}

impl From<Vec<Message>> for History {
    fn from(v: Vec<Message>) -> Self {
        v.into_iter().collect()
    }
}

impl Extend<Message> for History {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, iter: I) {
        for m in iter {
            self.push(m);
        }
    }
}
