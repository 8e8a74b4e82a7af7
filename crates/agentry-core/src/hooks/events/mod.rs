//! The typed payloads of hook events, one module per group of DESIGN's table. What a hook may
//! change is a public field or a method.

mod batch;
mod context;
mod human;
mod meta;
mod model;
mod run;
mod state;
mod step;
mod sub_agent;
mod tool;

pub use batch::{AfterToolBatch, BatchPlan, BeforeToolBatch};
pub use context::{AfterCompact, BeforeCompact, CompactFailed};
pub use human::{ApprovalRequested, ApprovalResolved, Resolver, StoppedByHuman};
pub use meta::{HookFailed, HookFinished, HookStarted};
pub use model::{AfterModel, BeforeModel, TextDelta, Thinking};
pub use run::{RunEnd, RunFailed, RunStart};
pub use state::{Custom, MessageAdded, StateChange};
pub use step::{AfterStep, BeforeStep, StepDecision, Stop};
pub use sub_agent::{AfterSubAgent, BeforeSubAgent, SubAgentFailed};
pub use tool::{AfterTool, BeforeTool, ToolDecision, ToolFailed};

/// Whether a hook took a decision on the event (block, mock, skip, stop, recover, ...).
///
/// Every hook of the event still sees it: on forward events the first decision stands and later
/// hooks see it read-only; on reverse (onion) events an outer hook may replace an inner hook's
/// decision, and the outermost one stands (see [`Hooks::dispatch`](super::Hooks::dispatch)).
pub trait Decides {
    /// True once a decision was taken.
    fn decided(&self) -> bool {
        false
    }
    /// How many decisions were taken on the event so far (each call of a decision method counts
    /// one): the engine tells from it which hook took the decision that stands.
    fn marks(&self) -> u32 {
        0
    }
}
