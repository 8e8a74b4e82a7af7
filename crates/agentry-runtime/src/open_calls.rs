//! Calls whose Before event fired and whose closing event has not yet: when a run is cancelled
//! or stopped by a deadline in the middle of them, they are closed with their error event
//! (ToolFailed, SubAgentFailed), so every Before is followed by exactly one After or Error.

use agentry_core::ToolCallRef;
use serde_json::Value;
use std::sync::Mutex;

/// A call under way, opened by its Before event.
pub(crate) enum OpenCall {
    /// A tool call, with the input its BeforeTool hooks left.
    Tool { call: ToolCallRef, input: Value },
    /// A sub-agent call, with its name and the input its BeforeSubAgent hooks left.
    SubAgent { agent: String, input: String },
}

impl OpenCall {
    /// True for the sub-agent side of a call.
    fn is_sub_agent(&self) -> bool {
        matches!(self, OpenCall::SubAgent { .. })
    }
}

/// The calls of a run under way. Only filled when some hook wants the closing error events.
#[derive(Default)]
pub(crate) struct OpenCalls(Mutex<Vec<(String, OpenCall)>>);

impl OpenCalls {
    /// Notes that the call `call_id` opened.
    pub(crate) fn open(&self, call_id: &str, call: OpenCall) {
        self.lock().push((call_id.to_owned(), call));
    }

    /// Notes that the call `call_id` closed (its side `sub_agent` or the tool side).
    pub(crate) fn close(&self, call_id: &str, sub_agent: bool) {
        let mut open = self.lock();
        if let Some(at) = open
            .iter()
            .position(|(id, c)| id == call_id && c.is_sub_agent() == sub_agent)
        {
            open.swap_remove(at);
        }
    }

    /// Takes every call still open, the innermost (sub-agent side) first.
    pub(crate) fn take(&self) -> Vec<OpenCall> {
        let mut open: Vec<OpenCall> = std::mem::take(&mut *self.lock())
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        open.sort_by_key(|c| !c.is_sub_agent());
        open
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, OpenCall)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
