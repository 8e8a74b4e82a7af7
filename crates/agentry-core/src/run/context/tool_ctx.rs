//! What a tool receives besides its input.

use super::shortcuts::run_shortcuts;
use super::{RunContext, RunContextSpec};
use crate::state::{StateError, StateSource};
use crate::{Message, ToolCallRef};
use std::sync::Arc;

/// What a tool receives besides its input: the run ([`run`](Self::run)) plus the call's id and
/// tool name.
///
/// The run's everyday methods (ids, agent, step, session, tags, metadata, cancellation, state,
/// custom events, redaction) are repeated here; `update_state` here records the tool as the
/// source.
#[derive(Clone, Debug)]
pub struct ToolCtx {
    run: RunContext,
    call: ToolCallRef,
}

impl ToolCtx {
    /// A tool context for a call given by id and tool name.
    pub fn new(run: RunContext, call_id: Arc<str>, tool: Arc<str>) -> Self {
        ToolCtx {
            run,
            call: ToolCallRef::named(call_id, tool),
        }
    }

    /// A tool context for call `index` of a model turn (runtimes use this: it copies nothing).
    ///
    /// # Panics
    /// If the message has no tool call at `index`.
    pub fn for_turn(run: RunContext, turn: Arc<Message>, index: usize) -> Self {
        ToolCtx {
            run,
            call: ToolCallRef::in_turn(turn, index),
        }
    }

    /// The context of a call of `tool` in a run no runtime drives, for testing a tool on its
    /// own: see [`RunContext::detached`]. The call id is `call-1`.
    ///
    /// ```
    /// use agentry_core::{RunContextSpec, ToolCtx};
    /// let ctx = ToolCtx::detached(RunContextSpec::new("r-1", "planner"), "get_weather");
    /// assert_eq!(ctx.idempotency_key(), "r-1:call-1");
    /// ```
    pub fn detached(spec: RunContextSpec, tool: &str) -> Self {
        ToolCtx::new(
            RunContext::detached(spec),
            Arc::from("call-1"),
            Arc::from(tool),
        )
    }

    run_shortcuts!();

    /// The id of the call being answered.
    pub fn call_id(&self) -> &str {
        self.call.id()
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        self.call.name()
    }

    /// A key that is the same every time this call is issued, even after a resume: `run_id:call_id`.
    /// Tools with side effects use it to de-duplicate.
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}", self.run.run_id(), self.call_id())
    }

    /// The run's context.
    pub fn run(&self) -> &RunContext {
        &self.run
    }

    /// Updates the state; StateChange reports this tool as the source.
    pub fn update_state<S: 'static, R>(
        &self,
        update: impl FnOnce(&mut S) -> R,
    ) -> Result<R, StateError> {
        self.run
            .update_state_as(|| StateSource::Tool(self.tool_name().to_string()), update)
    }
}
