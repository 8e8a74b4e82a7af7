//! The `step` group: BeforeStep, AfterStep, Stop.

use super::Decides;
use crate::{StopReason, Usage};
use serde::Serialize;
use serde_json::Value;

/// What a BeforeStep hook decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepDecision {
    /// Skip this step: no model call; the next step follows.
    Skip,
    /// Stop the run with this reason.
    Stop(String),
    /// Stop the run with this typed reason (guards use it: [`StopReason::Limit`]).
    StopWith(StopReason),
}

/// A step is about to start. Hooks may skip it or stop the run.
#[derive(Clone, Debug, Serialize)]
pub struct BeforeStep {
    /// The step number (1-based).
    step: u32,
    #[serde(skip)]
    decision: Option<StepDecision>,
    #[serde(skip)]
    marks: u32,
}
impl BeforeStep {
    /// The step number (1-based).
    pub fn step(&self) -> u32 {
        self.step
    }
}
impl BeforeStep {
    /// A new event.
    pub fn new(step: u32) -> Self {
        BeforeStep {
            step,
            decision: None,
            marks: 0,
        }
    }
    /// Skips this step.
    pub fn skip(&mut self) {
        self.decision = Some(StepDecision::Skip);
        self.marks += 1;
    }
    /// Stops the run.
    pub fn stop(&mut self, reason: impl Into<String>) {
        self.decision = Some(StepDecision::Stop(reason.into()));
        self.marks += 1;
    }
    /// Stops the run with a typed reason.
    pub fn stop_with(&mut self, reason: StopReason) {
        self.decision = Some(StepDecision::StopWith(reason));
        self.marks += 1;
    }
    /// The decision, if a hook took one.
    pub fn decision(&self) -> Option<&StepDecision> {
        self.decision.as_ref()
    }
}
impl Decides for BeforeStep {
    fn decided(&self) -> bool {
        self.decision.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A step ended. Hooks may stop the run after it.
#[derive(Clone, Debug, Serialize)]
pub struct AfterStep {
    /// The step number.
    step: u32,
    /// Tokens used by the run so far.
    usage: Usage,
    /// Model calls made by the run so far.
    model_calls: u32,
    #[serde(skip)]
    stop: Option<StepDecision>,
    #[serde(skip)]
    marks: u32,
}
impl AfterStep {
    /// The step number.
    pub fn step(&self) -> u32 {
        self.step
    }
    /// Tokens used by the run so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }
    /// Model calls made by the run so far.
    pub fn model_calls(&self) -> u32 {
        self.model_calls
    }
}
impl AfterStep {
    /// A new event.
    pub fn new(step: u32, usage: Usage, model_calls: u32) -> Self {
        AfterStep {
            step,
            usage,
            model_calls,
            stop: None,
            marks: 0,
        }
    }
    /// Stops the run after this step.
    pub fn stop(&mut self, reason: impl Into<String>) {
        self.stop = Some(StepDecision::Stop(reason.into()));
        self.marks += 1;
    }
    /// Stops the run after this step, with a typed reason.
    pub fn stop_with(&mut self, reason: StopReason) {
        self.stop = Some(StepDecision::StopWith(reason));
        self.marks += 1;
    }
    /// The stop reason, if a hook gave one as text.
    pub fn stop_reason(&self) -> Option<&str> {
        match &self.stop {
            Some(StepDecision::Stop(reason)) => Some(reason),
            _ => None,
        }
    }
    /// The stop a hook decided, if one did ([`StepDecision::Stop`] or [`StepDecision::StopWith`]).
    pub fn stop_decision(&self) -> Option<&StepDecision> {
        self.stop.as_ref()
    }
}
impl Decides for AfterStep {
    fn decided(&self) -> bool {
        self.stop.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The run is about to stop. A hook may veto a natural stop (a final answer) by adding a message;
/// the run then goes on with that message as the next user turn.
#[derive(Clone, Debug, Serialize)]
pub struct Stop {
    /// Why the run is stopping.
    reason: StopReason,
    /// The last step.
    step: u32,
    /// The final answer, when the run stops with one (text as a JSON string, a structured
    /// output as its JSON value).
    output: Option<Value>,
    #[serde(skip)]
    veto: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl Stop {
    /// Why the run is stopping.
    pub fn reason(&self) -> &StopReason {
        &self.reason
    }
    /// The last step.
    pub fn step(&self) -> u32 {
        self.step
    }
    /// The final answer, when the run stops with one (text as a JSON string, a structured
    /// output as its JSON value).
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }
}
impl Stop {
    /// A new event.
    pub fn new(reason: StopReason, step: u32) -> Self {
        Stop {
            reason,
            step,
            output: None,
            veto: None,
            marks: 0,
        }
    }
    /// A new event for a run stopping with the final answer `output`.
    pub fn with_output(reason: StopReason, step: u32, output: Value) -> Self {
        Stop {
            output: Some(output),
            ..Stop::new(reason, step)
        }
    }
    /// Vetoes a natural stop, sending `message` to the model. Ignored for other stops (step
    /// limits, hook stops, cancellation), which cannot be vetoed.
    pub fn veto(&mut self, message: impl Into<String>) {
        if self.reason.is_natural() {
            self.veto = Some(message.into());
            self.marks += 1;
        }
    }
    /// The veto message, if a hook vetoed.
    pub fn vetoed(&self) -> Option<&str> {
        self.veto.as_deref()
    }
}
impl Decides for Stop {
    fn decided(&self) -> bool {
        self.veto.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
