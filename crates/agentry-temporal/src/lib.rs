//! agentry runs on Temporal: durable, distributed, and the same runs as in-process.
//!
//! A [`Worker`] hosts agents (their tools, sub-agents and hooks) and an `agentry_runtime::Runtime`
//! whose runtime-scope hooks, default model and limits their runs use. A [`Client`] starts a
//! run by agent name with the same input and options as the in-process runtime, and gets the
//! same [`RunOutput`](agentry_core::RunOutput): output, state, history, usage, steps and stop
//! reason. It can cancel a run, decide its calls that wait for approval, and list runs.
//!
//! # How a run is driven
//!
//! A run is a Temporal workflow (type `agentry.run`, its workflow id the run id). The workflow
//! executes the effects of the same step machine as the in-process runtime,
//! [`agentry_core::RunMachine`], which decides the run's course (steps, skips, stops, retries,
//! vetoes, the step limit, cancellations and deadlines) from what the effects returned. Every
//! effect is an activity that runs the in-process runtime's own code for it,
//! [`agentry_runtime::effects`], so hooks behave exactly as they do in-process:
//!
//! | activity | what runs in it |
//! |---|---|
//! | `agentry.begin` | RunStart hooks, MessageAdded for the input; records the run's plan |
//! | `agentry.model_step` | MessageAdded for what the workflow added, BeforeStep, the compaction (BeforeCompact, the summarising call, CompactFailed, AfterCompact), BeforeModel, around-model middleware, the model's stream with TextDelta and Thinking hooks, AfterModel (and its retries), MessageAdded for the turn, BeforeToolBatch |
//! | `agentry.tool_call` (one per call) | BeforeTool, approval, around-tool middleware, the tool, AfterTool or ToolFailed, ApprovalResolved for a person's decision; for a sub-agent, BeforeTool and BeforeSubAgent, then the call is handed to the workflow |
//! | `agentry.sub_agent_done` (one per sub-agent call) | AfterSubAgent or SubAgentFailed, then AfterTool or ToolFailed |
//! | `agentry.tool_batch_done` | AfterToolBatch, once every call of the turn has its result |
//! | `agentry.end_step` | MessageAdded for the results, AfterStep, Stop for a final answer |
//! | `agentry.finish` | Stop, RunFailed (which may recover), RunEnd |
//!
//! A hook's decision is part of its activity's result, recorded in the run's history: a replay
//! (another worker picking the run up, a worker restart) reads it back and never runs the hook
//! again. An activity that did not complete (its worker died) runs again with its hooks; its
//! heartbeat limit ([`Limits::heartbeat`]) says how soon. The hooks-only activities run only
//! when some hook of the run wants their events (recorded once, by `agentry.begin`, in the
//! run's plan), so a step without such hooks costs one model activity and one per tool call.
//!
//! Where activities run is the client's choice ([`Client::placement`]): scheduled by the server
//! on any worker (the default), or as local activities on the workflow's worker, for the
//! hooks-only phases or for every phase ([`Placement`]). Local activities save a round trip
//! through the server per phase (a step of one tool call: 4 ms instead of about 100 ms on a
//! local dev server) and send no heartbeats; a worker that dies takes with it what it ran since
//! its last workflow task completed, which the next worker runs again.
//!
//! Tool calls keep their call ids across retries, and the run id is the workflow id, so
//! [`ToolCtx::idempotency_key`](agentry_core::ToolCtx::idempotency_key) is the same for every
//! attempt at a call. A turn's calls run concurrently when the agent allows it and has no state
//! (calls that change state run one after another, each seeing the state the previous left).
//!
//! [`RunHandle::events`] streams the run's `RunEvent`s as the in-process runtime sends them
//! (streamed pieces of text and reasoning included, which arrive with their model step):
//! activities return the events their effects sent, the workflow records them with the events
//! of the run's course, and the stream reads them with a query.
//!
//! A sub-agent runs as a child workflow (run id `<parent run id>/<call id>`, agent the
//! sub-agent's path) with its ancestors' hooks around its own, as in-process, and ends as an
//! in-process sub-agent does: its answer or failure is the call's result, a hook's failure or
//! the nesting limit fails the parent too, cancelling the parent cancels it. Its events reach the
//! parent's stream as they happen: the stream reads the child workflow's own while it runs.
//!
//! Run-scope hooks and tool sources that are data (`RunOptions::with_stored`,
//! `RunOptions::with_stored_tools`: command hooks, MCP servers) travel with the run: each worker
//! builds them again with its runtime's restorers (`Runtime::restores`, `restores_tools`), once
//! per run it runs activities of, and a sub-agent's run gets its parent's.
//!
//! A call that needs approval makes the run wait in its workflow, costing no worker, until
//! [`RunHandle::decide`] delivers a decision for each waiting call (a Temporal update, checked
//! before it is accepted, refused when it comes after its client stopped waiting);
//! [`RunHandle::pending`] lists them from the workflow's memo, with or without workers. The
//! pause runs Stop and RunEnd hooks with `AwaitingApproval` (in `agentry.finish`), as
//! in-process, and [`RunHandle::result`] returns the run paused.
//!
//! An activity gets the run's history as a delta, completed from the worker's cache of the
//! run's history or, on a miss, from the workflow by query, and checked against digests, so a
//! step ships the same few messages at any length of run. A run whose workflow history reaches
//! [`Client::continue_as_new_after`] events continues as a new execution between two steps,
//! carrying all its state.
//!
//! # Deadlines, batch hooks, compaction
//! A deadline a hook sets with `RunContext::stop_at` (the built-in guards' wall time, for one)
//! is a durable timer of the run's workflow; when it passes, what is in flight is cancelled, the
//! calls of the turn under way get an error result, and the run ends with the deadline's reason,
//! as in-process. A deadline that passes inside the activity that set it ends that activity at
//! once. BeforeToolBatch hooks run at the end of `agentry.model_step` and AfterToolBatch hooks in
//! an activity of their own (`agentry.tool_batch_done`); an agent's compaction runs in
//! `agentry.model_step`, before the model turn, and the workflow folds its copy of the history
//! the same way.
//!
//! # Not supported yet
//! Run-scope hooks and tool sources that are closures rather than data (the client refuses
//! them). A run's whole history must fit in one Temporal payload: it travels whole in the result, in a continued execution's
//! input and in the answer to a cache miss.
//!
//! # Example
//! The book's chapter (`docs/src/temporal.md`) shows a worker and a client against a local
//! dev server.

#![warn(missing_docs, unreachable_pub)]

mod activities;
mod cache;
mod client;
mod connect;
mod error;
mod events;
mod fork;
mod ledger;
mod reading;
mod recent;
mod scopes;
mod wire;
mod wording;
mod worker;
mod workflow;

pub use client::{
    Client, DEFAULT_DECISION_TIMEOUT, DEFAULT_PAUSE_CHECK, DEFAULT_WORKER_WAIT, MAX_INLINE_MEDIA,
    RunHandle, RunRequest, RunState, RunSummary,
};
pub use connect::Server;
pub use error::TemporalError;
pub use wire::{Limits, Placement};
pub use worker::{SpawnedWorker, Worker, WorkerStop};

// The README and the book's chapter, their samples compiled by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/temporal.md")]
mod book_temporal {}
