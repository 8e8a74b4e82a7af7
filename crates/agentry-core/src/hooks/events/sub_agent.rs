//! The `sub-agent` group: BeforeSubAgent, AfterSubAgent, SubAgentFailed.

use super::Decides;
use serde::Serialize;

/// A sub-agent is about to run. Hooks may rewrite its input or block it.
#[derive(Clone, Debug, Serialize)]
pub struct BeforeSubAgent {
    /// The sub-agent's name.
    agent: String,
    /// The tool call that asked for it.
    #[serde(rename = "tool_use_id")]
    call_id: String,
    /// Its input.
    pub input: String,
    #[serde(skip)]
    blocked: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl BeforeSubAgent {
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// The tool call that asked for it.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}
impl BeforeSubAgent {
    /// A new event.
    pub fn new(agent: String, call_id: String, input: String) -> Self {
        BeforeSubAgent {
            agent,
            call_id,
            input,
            blocked: None,
            marks: 0,
        }
    }
    /// Blocks the sub-agent; the parent model sees the reason.
    pub fn block(&mut self, reason: impl Into<String>) {
        self.blocked = Some(reason.into());
        self.marks += 1;
    }
    /// The block reason, if a hook blocked.
    pub fn blocked(&self) -> Option<&str> {
        self.blocked.as_deref()
    }
}
impl Decides for BeforeSubAgent {
    fn decided(&self) -> bool {
        self.blocked.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A sub-agent returned. Hooks may rewrite the output the parent sees.
#[derive(Clone, Debug, Serialize)]
pub struct AfterSubAgent {
    /// The sub-agent's name.
    agent: String,
    /// The child run's id.
    #[serde(rename = "child_run_id")]
    run_id: String,
    /// Its input.
    input: String,
    /// Its output, as the parent model will see it.
    pub output: String,
}
impl AfterSubAgent {
    /// A new event (runtimes create these).
    #[allow(clippy::too_many_arguments)]
    pub fn new(agent: String, run_id: String, input: String, output: String) -> Self {
        AfterSubAgent {
            agent,
            run_id,
            input,
            output,
        }
    }
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// The child run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// Its input.
    pub fn input(&self) -> &str {
        &self.input
    }
}
impl Decides for AfterSubAgent {}

/// A sub-agent failed. A hook may recover with an output.
#[derive(Clone, Debug, Serialize)]
pub struct SubAgentFailed {
    /// The sub-agent's name.
    agent: String,
    /// Its input.
    input: String,
    /// What went wrong.
    error: String,
    #[serde(skip)]
    recovery: Option<String>,
    #[serde(skip)]
    rewritten: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl SubAgentFailed {
    /// The sub-agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// Its input.
    pub fn input(&self) -> &str {
        &self.input
    }
    /// What went wrong.
    pub fn error(&self) -> &str {
        &self.error
    }
}
impl SubAgentFailed {
    /// A new event.
    pub fn new(agent: String, input: String, error: String) -> Self {
        SubAgentFailed {
            agent,
            input,
            error,
            recovery: None,
            rewritten: None,
            marks: 0,
        }
    }
    /// Recovers with this output.
    pub fn recover(&mut self, output: impl Into<String>) {
        self.recovery = Some(output.into());
        self.marks += 1;
    }
    /// The recovery output, if a hook gave one.
    pub fn recovery(&self) -> Option<&str> {
        self.recovery.as_deref()
    }
    /// Changes the error the model sees when no hook recovers (a friendlier or safer message);
    /// [`error`](Self::error) stays what happened, for the hooks after this one.
    pub fn rewrite_error(&mut self, message: impl Into<String>) {
        self.rewritten = Some(message.into());
    }
    /// The error as a hook rewrote it, if one did.
    pub fn rewritten_error(&self) -> Option<&str> {
        self.rewritten.as_deref()
    }
}
impl Decides for SubAgentFailed {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
