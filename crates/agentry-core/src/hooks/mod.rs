//! The hook engine: typed events, hooks (closures and plugins), registration with priority and
//! policy, and dispatch.
//!
//! # Semantics
//! - **Pipeline.** A hook receives the event and returns it, possibly changed; the next hook sees
//!   the change.
//! - **Decisions.** Every hook sees every event it subscribed to, and the decision (block, mock,
//!   skip, stop, veto, recover, respond, retry, abort) of the highest-priority hook that took one
//!   stands: on forward events the first decision stands and later hooks see the decided event
//!   read-only (except a tool call's request for approval, which a later hook may still turn
//!   into a block or a mock); on reverse events inner hooks decide first and an outer hook may
//!   replace their decision.
//! - **Order.** Higher priority first (default 0); equal priorities keep registration order, with
//!   inherited (parent-run) hooks before runtime hooks, runtime before agent, agent before run.
//!   After, end and error events run in reverse, so paired hooks nest like middleware.
//! - **Errors.** A hook that returns an error, panics or overruns its timeout fails the run, with
//!   an error naming the hook and the event; an `advisory` hook's failure is logged and reported
//!   as HookFailed, and the chain goes on with the event as it was before that hook.
//! - **Cost.** An event that no hook wants costs one branch: no payload is built.

/// Calls `$m!` with the list of events that have payloads:
/// `[Type, method, FLAG, "doc", method]`.
macro_rules! with_events {
    ($m:ident) => {
        $m! {
            [RunStart, run_start, RUN_START, "A run starts: rewrite the input, or the state through the context.", run_start],
            [RunEnd, run_end, RUN_END, "A run ended: observe its stop reason, output and usage.", run_end],
            [RunFailed, run_failed, RUN_FAILED, "A run failed: observe, or recover with an output.", run_failed],
            [BeforeStep, before_step, BEFORE_STEP, "A step is about to start: skip it or stop the run.", before_step],
            [AfterStep, after_step, AFTER_STEP, "A step ended: observe, or stop the run.", after_step],
            [Stop, stop, STOP, "The run is about to stop: veto a natural stop with a message.", stop],
            [BeforeModel, before_model, BEFORE_MODEL, "A model call is about to be made: rewrite the request, or answer it.", before_model],
            [AfterModel, after_model, AFTER_MODEL, "A model call returned: rewrite the response, or retry with feedback.", after_model],
            [TextDelta, text_delta, TEXT_DELTA, "The model streamed text: observe, or abort the stream.", text_delta],
            [Thinking, thinking, THINKING, "The model streamed reasoning: observe, or abort the stream.", thinking],
            [BeforeTool, before_tool, BEFORE_TOOL, "A tool call is about to run: rewrite the input, block, or mock.", before_tool],
            [AfterTool, after_tool, AFTER_TOOL, "A tool call returned: rewrite the result.", after_tool],
            [BeforeToolBatch, before_tool_batch, BEFORE_TOOL_BATCH, "The tool calls of one model turn are about to run: see them together, block some, or set the order they run in.", before_tool_batch],
            [AfterToolBatch, after_tool_batch, AFTER_TOOL_BATCH, "The tool calls of one model turn all have their results: observe them together.", after_tool_batch],
            [ToolFailed, tool_failed, TOOL_FAILED, "A tool call failed: recover with a result.", tool_failed],
            [BeforeSubAgent, before_sub_agent, BEFORE_SUB_AGENT, "A sub-agent is about to run: rewrite its input, or block it.", before_sub_agent],
            [AfterSubAgent, after_sub_agent, AFTER_SUB_AGENT, "A sub-agent returned: rewrite its output.", after_sub_agent],
            [SubAgentFailed, sub_agent_failed, SUB_AGENT_FAILED, "A sub-agent failed: recover with an output.", sub_agent_failed],
            [ApprovalRequested, approval_requested, APPROVAL_REQUESTED, "A tool call needs approval: decide it, or let the run pause for a person.", approval_requested],
            [ApprovalResolved, approval_resolved, APPROVAL_RESOLVED, "An approval was decided: observe who decided what.", approval_resolved],
            [StoppedByHuman, stopped_by_human, STOPPED_BY_HUMAN, "A person rejected a call and stopped the run: observe.", stopped_by_human],
            [BeforeCompact, before_compact, BEFORE_COMPACT, "The history is about to be compacted: veto, or change the plan.", before_compact],
            [AfterCompact, after_compact, AFTER_COMPACT, "The history was compacted: rewrite the summary.", after_compact],
            [CompactFailed, compact_failed, COMPACT_FAILED, "The summarising call failed: supply a summary, or choose to go on or fail.", compact_failed],
            [StateChange, state_change, STATE_CHANGE, "The state changed: observe the previous and new state and the source.", state_change],
            [MessageAdded, message_added, MESSAGE_ADDED, "A message was added to the history: observe it.", message_added],
            [Custom, custom, CUSTOM, "A tool or hook emitted a custom event: observe it.", custom],
            [HookStarted, hook_started, HOOK_STARTED, "A hook is about to run: observe.", hook_started],
            [HookFinished, hook_finished, HOOK_FINISHED, "A hook finished: observe its duration.", hook_finished],
            [HookFailed, hook_failed, HOOK_FAILED, "A hook failed: observe the error.", hook_failed],
        }
    };
}
pub(crate) use with_events;

mod closure;
mod dispatch;
mod error;
pub mod events;
mod future;
mod hook;
mod live;
mod middleware;
mod registry;
mod stored;
mod trace;

pub use crate::run::context::HookCtx;
pub use crate::run::{EventKind, Events, HookName};
pub use closure::{
    CallsInPlace, FnAround, FnHook, FnInPlaceHook, FnSyncHook, InPlaceFn, InPlaceWithFn, on,
    on_mut, on_sync,
};
pub use dispatch::{Dispatch, Dispatched};
pub use error::{BoxError, HookError, HookFailure, HookResult};
pub use events::*;
pub use future::{HOOK_FUTURE_INLINE, HookFuture, IN_PLACE_FUTURE_INLINE, InPlaceFuture};
pub use hook::Hook;
pub use live::{HookHandle, LiveHooks, RegistryEvent};
pub use middleware::{
    AroundEntry, AroundOutput, HandlesAround, ModelOutcome, Next, Terminal, ToolCallRequest,
    ToolOutcome,
};
pub use registry::{
    Entry, Event, Handler, Handles, HandlesInPlace, HandlesSync, HookExt, HookMeta,
    HookRegistration, Hooks, IntoHook,
};
pub use stored::{HookSpecRecord, StoredHook};
pub use trace::{HookStep, Traced};
