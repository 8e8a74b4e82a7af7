//! The `run` group: RunStart, RunEnd, RunFailed.

use super::{Decides, form};
use crate::{Content, Error, StopReason, Usage};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// A run starts. Hooks may rewrite the input; the state can be changed through the context.
#[derive(Clone, Debug, Serialize)]
pub struct RunStart {
    /// The user input that starts the run: text, or parts (images, files) that hooks may
    /// inspect, drop, replace or redact.
    pub input: Content,
}
impl Decides for RunStart {}

/// A run ended (not after a failure: see [`RunFailed`]).
#[derive(Clone, Debug, Serialize)]
pub struct RunEnd {
    /// Why it ended.
    stop: StopReason,
    /// The output (text as a JSON string, or the structured output), when there is one.
    output: Option<Value>,
    /// Tokens used by the run.
    usage: Usage,
    /// Steps taken.
    steps: u32,
}
impl RunEnd {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(stop: StopReason, output: Option<Value>, usage: Usage, steps: u32) -> Self {
        RunEnd {
            stop,
            output,
            usage,
            steps,
        }
    }
    /// Why it ended.
    pub fn stop(&self) -> &StopReason {
        &self.stop
    }
    /// The output (text as a JSON string, or the structured output), when there is one.
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }
    /// Tokens used by the run.
    pub fn usage(&self) -> Usage {
        self.usage
    }
    /// Steps taken.
    pub fn steps(&self) -> u32 {
        self.steps
    }
}
impl Decides for RunEnd {}

/// A run failed. A hook may recover with an output; the run then ends normally.
#[derive(Clone, Debug, Serialize)]
pub struct RunFailed {
    /// The failure.
    #[serde(serialize_with = "form::message")]
    error: Arc<Error>,
    #[serde(skip)]
    recovery: Option<Value>,
    #[serde(skip)]
    marks: u32,
}
impl RunFailed {
    /// The failure.
    pub fn error(&self) -> &Arc<Error> {
        &self.error
    }
}
impl RunFailed {
    /// A new event.
    pub fn new(error: Arc<Error>) -> Self {
        RunFailed {
            error,
            recovery: None,
            marks: 0,
        }
    }
    /// Recovers the run with this output (text, or JSON for a structured output type).
    pub fn recover(&mut self, output: impl Into<Value>) {
        self.recovery = Some(output.into());
        self.marks += 1;
    }
    /// The recovery output, if a hook gave one.
    pub fn recovery(&self) -> Option<&Value> {
        self.recovery.as_ref()
    }
}
impl Decides for RunFailed {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
