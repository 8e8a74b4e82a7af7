//! The typed payloads of hook events, one module per group of DESIGN's table. What a hook may
//! change is a public field or a method.
//!
//! # The JSON form
//! Every event a hook outside the process can handle serializes (`serde::Serialize`) to one JSON
//! object: what command hooks and webhooks receive for the event under its own name
//! (`agentry-external` adds the fields common to every payload beside it). Keys are snake_case;
//! a call is named as hook scripts know it (`tool_name`, `tool_input`, `tool_use_id`); the
//! decisions hooks took and the engine's bookkeeping are not part of it. Dispatch never
//! serializes: an event costs nothing more until a hook asks for its JSON.
//!
//! | group | event | fields |
//! |---|---|---|
//! | run | [`RunStart`] | `input` |
//! | | [`RunEnd`] | `stop` (a [`StopReason`](crate::StopReason)), `output` (or null), `usage`, `steps` |
//! | | [`RunFailed`] | `error` (its message) |
//! | step | [`BeforeStep`] | `step` |
//! | | [`AfterStep`] | `step`, `usage`, `model_calls` |
//! | | [`Stop`] | `reason` (a [`StopReason`](crate::StopReason)), `step`, `output` (or null) |
//! | model | [`BeforeModel`] | `system` (or null), `messages`, `tools` (their names), `params` |
//! | | [`AfterModel`] | `model`, `text`, `tool_calls`, `usage`, `finish_reason` |
//! | | [`TextDelta`], [`Thinking`] | `text` |
//! | tool | [`BeforeTool`] | `tool_name`, `tool_input`, `tool_use_id` |
//! | | [`AfterTool`] | `tool_name`, `tool_input`, `tool_use_id`, `content`, `is_error`, `mocked` |
//! | | [`ToolFailed`] | `tool_name`, `tool_input`, `tool_use_id`, `error` |
//! | batch | [`BeforeToolBatch`] | `tool_calls`: `[{tool_name, tool_input, tool_use_id}]`, each input parsed from its arguments (their text when they are not JSON) |
//! | | [`AfterToolBatch`] | `tool_results`: `[{tool_use_id, tool_name, tool_response, is_error}]` |
//! | sub-agent | [`BeforeSubAgent`] | `agent`, `tool_use_id`, `input` |
//! | | [`AfterSubAgent`] | `agent`, `child_run_id`, `input`, `output` |
//! | | [`SubAgentFailed`] | `agent`, `input`, `error` |
//! | human | [`ApprovalRequested`] | `tool_name`, `tool_input`, `tool_use_id`, `reason` |
//! | | [`ApprovalResolved`] | `tool_name`, `tool_input`, `tool_use_id`, `decision` (a [`Decision`](crate::Decision)), `by` ([`Resolver`]) |
//! | | [`StoppedByHuman`] | `tool_use_id`, `reason`, `by` ([`Resolver`]) |
//! | context | [`BeforeCompact`] | `tokens`, `threshold`, `messages` (how many) |
//! | | [`AfterCompact`] | `tokens_before`, `summary` |
//! | | [`CompactFailed`] | `error` (its message) |
//! | state | [`StateChange`] | `previous`, `current`, `source` |
//! | | [`MessageAdded`] | `message` |
//! | | [`Custom`] | `name`, `data` |
//!
//! Compaction plans and policies are not part of the form. The meta events ([`HookStarted`],
//! [`HookFinished`], [`HookFailed`]) observe hooks themselves and have none.

mod batch;
mod changes;
mod context;
mod form;
mod human;
mod meta;
mod model;
mod run;
mod state;
mod step;
mod sub_agent;
mod tool;

pub use batch::{AfterToolBatch, BatchPlan, BeforeToolBatch};
pub use changes::Changes;
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
    /// True once the decision taken is final: on a forward event, the hooks after the one that
    /// took it see the event read-only. A decision later hooks may still overrule (a call that
    /// waits for approval, which a later hook may still block) is taken but not final.
    fn closed(&self) -> bool {
        self.decided()
    }
    /// How many decisions were taken on the event so far (each call of a decision method counts
    /// one): the engine tells from it which hook took the decision that stands.
    fn marks(&self) -> u32 {
        0
    }
}

#[cfg(test)]
mod tests;
