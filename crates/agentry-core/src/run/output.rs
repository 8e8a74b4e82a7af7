//! What a finished run returns.

use crate::{History, StopReason, Usage};

/// The result of a run: output, final state, history, usage, steps and why it stopped.
#[derive(Clone, Debug)]
pub struct RunOutput<S, O> {
    /// The run id.
    pub run_id: String,
    /// The output: the final answer (typed for a structured output type). `None` when the run
    /// stopped without one (step limit, a hook's stop, cancellation).
    pub output: Option<O>,
    /// The text of the last model turn.
    pub text: String,
    /// The final state.
    pub state: S,
    /// The whole history.
    pub messages: History,
    /// Tokens used by every model call of the run (responses AfterModel hooks rejected
    /// included), sub-agents excluded.
    pub usage: Usage,
    /// The part of `usage` spent on responses that AfterModel hooks rejected (asked to retry).
    pub retried_usage: Usage,
    /// Steps taken.
    pub steps: u32,
    /// Model turns accepted (including those answered by hooks).
    pub model_calls: u32,
    /// Why the run stopped.
    pub stop: StopReason,
}

impl<S, O> RunOutput<S, O> {
    /// The output, or a panic naming the stop reason: for tests and examples.
    pub fn expect_output(self) -> O {
        match self.output {
            Some(o) => o,
            None => panic!("the run stopped without an output: {}", self.stop),
        }
    }
}
