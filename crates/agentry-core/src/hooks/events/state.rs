//! The `state` group: StateChange, MessageAdded, Custom.

use super::Decides;
use crate::{Message, StateSource};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// The state changed.
#[derive(Clone, Debug, Serialize)]
pub struct StateChange {
    /// The state before.
    previous: Value,
    /// The state after.
    current: Value,
    /// Who changed it.
    source: StateSource,
}
impl StateChange {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(previous: Value, current: Value, source: StateSource) -> Self {
        StateChange {
            previous,
            current,
            source,
        }
    }
    /// The state before.
    pub fn previous(&self) -> &Value {
        &self.previous
    }
    /// The state after.
    pub fn current(&self) -> &Value {
        &self.current
    }
    /// Who changed it.
    pub fn source(&self) -> &StateSource {
        &self.source
    }
}
impl StateChange {
    /// The change as an RFC 6902 JSON Patch.
    pub fn patch(&self) -> json_patch::Patch {
        json_patch::diff(&self.previous, &self.current)
    }
}
impl Decides for StateChange {}

/// A message was added to the history.
#[derive(Clone, Debug, Serialize)]
pub struct MessageAdded {
    /// The message.
    message: Arc<Message>,
}
impl MessageAdded {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(message: Arc<Message>) -> Self {
        MessageAdded { message }
    }
    /// The message.
    pub fn message(&self) -> &Arc<Message> {
        &self.message
    }
}
impl Decides for MessageAdded {}

/// A tool or hook emitted a custom event.
#[derive(Clone, Debug, Serialize)]
pub struct Custom {
    /// The event name.
    name: String,
    /// Its data.
    data: Value,
}
impl Custom {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(name: String, data: Value) -> Self {
        Custom { name, data }
    }
    /// The event name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its data.
    pub fn data(&self) -> &Value {
        &self.data
    }
}
impl Decides for Custom {}
