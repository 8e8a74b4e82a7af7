//! The payloads of the tool-batch events: BeforeToolBatch and AfterToolBatch, around all the
//! tool calls of one model turn.

use super::{Decides, form};
use crate::{Message, ToolCall, ToolResult};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The tool calls of one model turn are about to run. A hook sees them together and may block
/// some (each gets the reason as its error result and never runs: no BeforeTool fires for it) or
/// set the order they start in. The results stay in the order the model asked for them.
#[derive(Clone, Debug, Serialize)]
pub struct BeforeToolBatch {
    #[serde(rename = "tool_calls", serialize_with = "form::batch_calls")]
    turn: Arc<Message>,
    #[serde(skip)]
    blocked: Vec<(String, String)>,
    #[serde(skip)]
    order: Option<Vec<String>>,
    #[serde(skip)]
    marks: u32,
}

impl BeforeToolBatch {
    /// A new event for the calls of `turn`, an assistant message (runtimes create these).
    pub fn new(turn: Arc<Message>) -> Self {
        BeforeToolBatch {
            turn,
            blocked: Vec::new(),
            order: None,
            marks: 0,
        }
    }
    /// The calls, in the order the model asked for them.
    pub fn calls(&self) -> &[ToolCall] {
        self.turn.tool_calls()
    }
    /// Blocks the call `call_id` with a reason the model sees. An id the batch does not hold is
    /// ignored.
    pub fn block(&mut self, call_id: &str, reason: impl Into<String>) {
        if self.calls().iter().any(|c| c.id == call_id) {
            self.blocked.retain(|(id, _)| id != call_id);
            self.blocked.push((call_id.to_string(), reason.into()));
            self.marks += 1;
        }
    }
    /// Starts the calls in this order of call ids: the calls named first start first; calls not
    /// named follow in their own order; unknown ids are ignored.
    pub fn reorder<I: Into<String>>(&mut self, call_ids: impl IntoIterator<Item = I>) {
        self.order = Some(call_ids.into_iter().map(Into::into).collect());
        self.marks += 1;
    }
    /// The reason `call_id` was blocked, if a hook blocked it.
    pub fn blocked(&self, call_id: &str) -> Option<&str> {
        self.blocked
            .iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, reason)| reason.as_str())
    }
    /// The indices of the calls in the order they start (runtimes use this).
    pub fn start_order(&self) -> Vec<usize> {
        let calls = self.calls();
        let mut order: Vec<usize> = Vec::with_capacity(calls.len());
        if let Some(ids) = &self.order {
            for id in ids {
                if let Some(i) = calls.iter().position(|c| &c.id == id)
                    && !order.contains(&i)
                {
                    order.push(i);
                }
            }
        }
        for i in 0..calls.len() {
            if !order.contains(&i) {
                order.push(i);
            }
        }
        order
    }
}

impl Decides for BeforeToolBatch {
    fn decided(&self) -> bool {
        !self.blocked.is_empty() || self.order.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The tool calls of one model turn all have their results (before they are added to the
/// history). Observe them together.
#[derive(Clone, Debug, Serialize)]
pub struct AfterToolBatch {
    #[serde(rename = "tool_results", serialize_with = "form::batch_results")]
    results: Vec<ToolResult>,
}

impl AfterToolBatch {
    /// A new event (runtimes create these).
    pub fn new(results: Vec<ToolResult>) -> Self {
        AfterToolBatch { results }
    }
    /// The results, in the order the model asked for the calls.
    pub fn results(&self) -> &[ToolResult] {
        &self.results
    }
    /// The results (runtimes take them back once the hooks ran).
    pub fn into_results(self) -> Vec<ToolResult> {
        self.results
    }
}

impl Decides for AfterToolBatch {}

/// How BeforeToolBatch hooks want the calls of a turn run: what they decided, kept with the
/// run's checkpoint while the turn is under way, so a turn resumed after an approval (or in
/// another process) follows it instead of asking the hooks again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchPlan {
    /// The indices of the calls, in the order they start.
    pub order: Vec<usize>,
    /// The calls the hooks blocked, by index, with the error result the model sees for each;
    /// they never run.
    pub blocked: Vec<(usize, ToolResult)>,
}

impl BatchPlan {
    /// What the BeforeToolBatch hooks that ran on `batch` decided.
    pub fn of(batch: &BeforeToolBatch) -> Self {
        let blocked = batch
            .calls()
            .iter()
            .enumerate()
            .filter_map(|(index, call)| {
                let reason = batch.blocked(&call.id)?;
                Some((index, ToolResult::error(&call.id, &call.name, reason)))
            })
            .collect();
        BatchPlan {
            order: batch.start_order(),
            blocked,
        }
    }

    /// The result a blocked call `index` gets, if the hooks blocked it.
    pub fn blocked(&self, index: usize) -> Option<&ToolResult> {
        self.blocked
            .iter()
            .find_map(|(i, result)| (*i == index).then_some(result))
    }
}
