//! One run's effects, run one at a time by a runtime that drives the step machine itself.
//!
//! The in-process [`Runtime`] drives a run's [`RunMachine`] in a loop of its own. A durable
//! engine (the `agentry-temporal` crate) drives the same machine from its own loop, which must
//! be deterministic, and runs each effect somewhere else: a model turn, a tool call, or the
//! hooks of one phase of a step. [`RunEffects`] is the in-process runtime's own code for each of
//! those effects, with its hooks, opened on a run as a [`RunSnapshot`] describes it, so both
//! runtimes run the same hooks in the same way: what a hook can rewrite, block, mock or decide is
//! decided here, by the code the in-process runtime uses.
//!
//! A `RunEffects` changes its own copy of the run (its machine and state); the caller reads
//! what changed ([`RunEffects::machine`], [`RunEffects::state`]) and applies it to the run it
//! drives. It never checkpoints: the caller's engine records the outcome.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), agentry::Error> {
//! use agentry::prelude::*;
//! use agentry::RunSnapshot;
//!
//! let agent = Agent::builder("greeter")
//!     .model(ScriptedModel::new().text("Hello!"))
//!     .build()?;
//! let snapshot = RunSnapshot::new("r-1", "greeter");
//! let mut effects = Runtime::new().effects(agent.def(), &snapshot)?;
//! effects.run_start("Hi".into()).await?;
//! let response = effects.model_turn(1).await?;
//! assert_eq!(response.text, "Hello!");
//! effects.accept_turn(response).await?;
//! assert_eq!(effects.machine().last_text(), "Hello!");
//! # Ok(()) }
//! ```

use super::driver::Driver;
use agentry_core::hooks::Events;
use agentry_core::{
    AgentDef, Error, Message, PendingApproval, RunContext, RunEngine, RunMachine, StopReason,
    ToolResult,
};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

mod open;
mod phases;

/// The effects of one run, as the in-process runtime runs them. See the [module docs](self).
pub struct RunEffects {
    driver: Box<Driver>,
}

impl std::fmt::Debug for RunEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEffects")
            .field("run_id", &self.driver.scope.context().run_id())
            .field("agent", &self.driver.def.name)
            .field("step", &self.driver.machine.step)
            .finish()
    }
}

/// How a step opened, after its BeforeStep hooks.
#[derive(Clone, Debug, PartialEq)]
pub enum StepOpening {
    /// The step goes on: call the model.
    Go,
    /// A hook skipped the step: it ends without a model turn.
    Skip,
    /// A hook stopped the run before the step: it does not count.
    Stop(StopReason),
}

/// How one tool call settled. Its serde form is what durable engines record (a Temporal
/// activity's result).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CallOutcome {
    /// With a result the model will see.
    Done(ToolResult),
    /// Waiting for a person's decision.
    Pending(PendingApproval),
    /// Rejected, and the run stops ([`StopReason::StoppedByHuman`]).
    Stop {
        /// The result the model sees for the call.
        result: ToolResult,
        /// Why the run stops.
        reason: String,
    },
    /// A call of a sub-agent, handed to the caller to run as a run of its own (only when the
    /// effects [delegate sub-agents](RunEffects::delegate_sub_agents)): the caller runs it and
    /// closes the call with [`RunEffects::sub_agent_finished`].
    SubAgent(SubAgentRequest),
}

/// A sub-agent's run that a call asks for, after its BeforeTool and BeforeSubAgent hooks.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SubAgentRequest {
    /// The sub-agent's name.
    pub agent: String,
    /// Its task: the run's input, as BeforeSubAgent hooks left it.
    pub task: String,
    /// The call's input as BeforeTool hooks left it (AfterTool and ToolFailed hooks see it).
    pub input: Value,
}

/// How a sub-agent's run ended, as its parent's call sees it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SubAgentOutcome {
    /// It answered.
    Answered {
        /// The sub-agent's run id.
        run_id: String,
        /// Its answer (a JSON text for an agent with an output schema).
        output: String,
    },
    /// It failed or stopped without an answer: the error the parent's model hears.
    Failed(String),
}

/// Messages `start..end` of a run's history, folded by its compaction into one user message
/// holding `summary` ([`RunEffects::compact`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Folded {
    /// The first folded message's index.
    pub start: usize,
    /// One past the last folded message's index.
    pub end: usize,
    /// The text of the message that replaced them.
    pub summary: String,
}

impl Folded {
    /// Folds the same messages of `history` (a copy of the history it was folded from).
    pub fn apply(&self, history: &mut agentry_core::History) {
        history.replace_range(self.start, self.end, Message::user(self.summary.clone()));
    }
}

pub use agentry_core::hooks::BatchPlan;

/// A run's run-scope hooks and tool sources that are data (`RunOptions::with_stored`,
/// `RunOptions::with_stored_tools`), built again from their records by
/// [`Runtime::restore_scope`]. An engine that opens a run's effects many times keeps it, so the
/// hooks and sources (a persistent hook process, an MCP server) are built once per run.
#[derive(Clone, Default)]
pub struct StoredScope {
    /// The records they were built from.
    pub records: Vec<agentry_core::hooks::HookSpecRecord>,
    /// The hooks.
    pub hooks: agentry_core::hooks::Hooks,
    /// The tool sources.
    pub tool_sources: Vec<Arc<dyn agentry_core::ToolSource>>,
}

impl std::fmt::Debug for StoredScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self.records.iter().map(|r| r.kind.as_str()).collect();
        f.debug_struct("StoredScope")
            .field("kinds", &kinds)
            .finish()
    }
}

impl std::fmt::Debug for Lineage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.ancestors.iter().map(|a| &*a.name).collect();
        f.debug_struct("Lineage")
            .field("ancestors", &names)
            .field("root_run_id", &self.root_run_id)
            .finish()
    }
}

impl SubAgentOutcome {
    /// The outcome of sub-agent `agent`'s run `run_id`, which ended with `output` (if it
    /// answered) and `stop`.
    pub fn of_run(agent: &str, run_id: String, output: Option<Value>, stop: &StopReason) -> Self {
        match output {
            Some(Value::String(output)) => SubAgentOutcome::Answered { run_id, output },
            Some(other) => SubAgentOutcome::Answered {
                run_id,
                output: other.to_string(),
            },
            None if stop.is_paused() => SubAgentOutcome::Failed(format!(
                "sub-agent `{agent}` stopped, {stop}: calls inside a sub-agent cannot wait for a person (require approval for the `{agent}` call itself)"
            )),
            None => SubAgentOutcome::Failed(format!(
                "sub-agent `{agent}` stopped without an answer: {stop}"
            )),
        }
    }

    /// The outcome of sub-agent `agent`'s run, which failed with `error`. (A hook's failure and
    /// the nesting limit fail the parent run instead, as they do in-process.)
    pub fn failed(agent: &str, error: &dyn std::fmt::Display) -> Self {
        SubAgentOutcome::Failed(format!("sub-agent `{agent}` failed: {error}"))
    }
}

/// Where a sub-agent's run opened with [`Runtime::sub_agent_effects`] sits.
#[derive(Clone, Copy)]
pub struct Lineage<'a> {
    /// The agents of the runs above it, from the root run's down to its parent's: their hooks
    /// wrap its own, as in-process.
    pub ancestors: &'a [Arc<AgentDef>],
    /// The root run's id.
    pub root_run_id: &'a str,
}

impl RunEffects {
    /// True when some hook of the run wants any of `events`.
    pub fn wants(&self, events: Events) -> bool {
        self.driver.scope.wants(events)
    }

    /// The events some hook of the run wants.
    pub fn wanted(&self) -> Events {
        self.driver.scope.hooks.wanted()
    }

    /// The agent definition the run uses.
    pub fn def(&self) -> &Arc<AgentDef> {
        &self.driver.def
    }

    /// The run's machine, as the effects run so far left it.
    pub fn machine(&self) -> &RunMachine {
        &self.driver.machine
    }

    /// The run's state as JSON, as the effects run so far left it.
    pub fn state(&self) -> Result<Value, Error> {
        Ok(self.driver.scope.context().state_json()?)
    }

    /// The run's context, as its hooks and tools see it.
    pub fn context(&self) -> &RunContext {
        self.driver.scope.context()
    }

    /// The run as this engine drives it: for racing an effect against the deadlines hooks set
    /// ([`RunEngine::deadline_passed`]).
    pub fn engine(&self) -> &RunEngine {
        &self.driver.scope.engine
    }

    /// The run's cancellation: cancelling it interrupts the effect under way at its next await
    /// point (tools and hooks see it on their context).
    pub fn cancellation(&self) -> CancellationToken {
        self.driver.scope.context().cancellation().clone()
    }
}
