//! What a finished run returns.

use crate::{History, StopReason, Usage};

/// The result of a run: output, final state, history, usage, steps and why it stopped.
///
/// Its serde form (with the state and the output as JSON, `RunOutput<Value, Value>`) is how a
/// run's result travels: a Temporal workflow's result, an HTTP answer.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunOutput<S, O> {
    /// The run id.
    pub run_id: String,
    /// The session the run belongs to, if any: the id to continue the conversation with.
    #[serde(default)]
    pub session_id: Option<String>,
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
    /// The same result with its state and output converted (a result that travelled as JSON,
    /// typed again); the first conversion that fails is the error.
    pub fn try_map<S2, O2, E>(
        self,
        state: impl FnOnce(S) -> Result<S2, E>,
        output: impl FnOnce(O) -> Result<O2, E>,
    ) -> Result<RunOutput<S2, O2>, E> {
        Ok(RunOutput {
            run_id: self.run_id,
            session_id: self.session_id,
            output: self.output.map(output).transpose()?,
            text: self.text,
            state: state(self.state)?,
            messages: self.messages,
            usage: self.usage,
            retried_usage: self.retried_usage,
            steps: self.steps,
            model_calls: self.model_calls,
            stop: self.stop,
        })
    }

    /// The output, or a panic naming the stop reason: for tests and examples.
    pub fn expect_output(self) -> O {
        match self.output {
            Some(o) => o,
            None => panic!("the run stopped without an output: {}", self.stop),
        }
    }
}
