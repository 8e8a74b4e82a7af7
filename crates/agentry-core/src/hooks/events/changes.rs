//! What a hook changed of an event: the fields of the event's JSON form that differ from the
//! event as the hook got it. Worked out only when someone observes [`HookFinished`] (the
//! engine then keeps a copy of the event before each hook); a dispatch nobody observes never
//! compares.

use super::*;
use serde::Serialize;
use serde_json::Value;

/// What a hook changed of an event, by the names of its JSON form's fields
/// ([`HookFinished::changed`]).
pub trait Changes {
    /// The names of the fields that differ from `before` (the event as the hook got it), in
    /// the order of the event's JSON form; empty when the hook changed nothing.
    fn changed_since(&self, before: &Self) -> Vec<String>;
}

/// The top-level fields in which the JSON forms of `now` and `before` differ (every event's
/// form is an object).
fn json_changes<T: Serialize>(now: &T, before: &T) -> Vec<String> {
    let (Ok(Value::Object(now)), Ok(Value::Object(mut before))) =
        (serde_json::to_value(now), serde_json::to_value(before))
    else {
        return Vec::new();
    };
    let mut changed: Vec<String> = now
        .into_iter()
        .filter(|(key, value)| before.remove(key).as_ref() != Some(value))
        .map(|(key, _)| key)
        .collect();
    changed.extend(before.into_iter().map(|(key, _)| key));
    changed
}

macro_rules! changes_by_json_form {
    ($($ty:ty),* $(,)?) => {
        $(impl Changes for $ty {
            fn changed_since(&self, before: &Self) -> Vec<String> {
                json_changes(self, before)
            }
        })*
    };
}

changes_by_json_form!(
    RunStart,
    RunEnd,
    RunFailed,
    BeforeStep,
    AfterStep,
    Stop,
    AfterModel,
    TextDelta,
    Thinking,
    BeforeTool,
    AfterTool,
    BeforeToolBatch,
    AfterToolBatch,
    ToolFailed,
    BeforeSubAgent,
    AfterSubAgent,
    SubAgentFailed,
    ApprovalRequested,
    ApprovalResolved,
    StoppedByHuman,
    BeforeCompact,
    AfterCompact,
    CompactFailed,
    StateChange,
    MessageAdded,
    Custom,
);

/// A request is compared part by part ([`ModelRequest::changed_from`](crate::ModelRequest::changed_from)):
/// its shared history by identity, never serialised.
impl Changes for BeforeModel {
    fn changed_since(&self, before: &Self) -> Vec<String> {
        self.request
            .changed_from(&before.request)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}

/// The meta events have no JSON form, and no hook changes them.
macro_rules! no_changes {
    ($($ty:ty),* $(,)?) => {
        $(impl Changes for $ty {
            fn changed_since(&self, _before: &Self) -> Vec<String> {
                Vec::new()
            }
        })*
    };
}

no_changes!(HookStarted, HookFinished, HookFailed);
