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

use super::Runtime;
use super::driver::{Driver, stop_reason};
use super::nesting;
use super::tool_call::Settled;
use agentry_core::hooks::{
    AfterToolBatch, BeforeStep, BeforeToolBatch, Events, MessageAdded, RunEnd, RunError, RunStart,
    StepDecision,
};
use agentry_core::{
    AgentDef, Decision, Error, Message, ModelResponse, PendingApproval, RunContext, RunEvent,
    RunMachine, RunOptions, RunSnapshot, StopReason, ToolResult,
};
use futures::channel::mpsc::UnboundedSender;
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The effects of one run, as the in-process runtime runs them. See the [module docs](self).
pub struct RunEffects {
    driver: Box<Driver>,
}

impl std::fmt::Debug for RunEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEffects")
            .field("run_id", &self.driver.scope.ctx.run_id())
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

/// How one tool call settled.
#[derive(Clone, Debug, PartialEq)]
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
    /// The call's input as BeforeTool hooks left it (AfterTool and ToolError hooks see it).
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

impl Runtime {
    /// The effects of the run `snapshot` describes, run as this runtime runs them: with its
    /// hooks (runtime, live and `agent`'s), default model and limits, but never its store.
    ///
    /// The run's hooks and tool sources that are data (`snapshot.hooks`, from
    /// `RunOptions::with_stored`) are built again with this runtime's restorers, as a resume
    /// builds them ([`restore_scope`](Self::restore_scope)).
    pub fn effects(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
    ) -> Result<RunEffects, Error> {
        self.effects_with(agent, snapshot, None, None, None)
    }

    /// [`effects`](Self::effects) whose run events go to `events`: what the effects do
    /// (messages they add, tool calls, hook decisions, state patches, custom events, streamed
    /// text). The events of the run's course — started, step started and finished, awaiting
    /// approval, finished or failed — and the messages the caller adds itself (and reports
    /// with [`RunEffects::report_added`]) are the caller's to send.
    pub fn effects_streaming(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
    ) -> Result<RunEffects, Error> {
        self.effects_with(agent, snapshot, Some(events), None, None)
    }

    /// [`effects_streaming`](Self::effects_streaming) of a sub-agent's run: `snapshot` (whose
    /// `parent_run_id` names the parent run) of `agent`, called by the runs of `lineage`. Its
    /// hooks are the runtime's, every ancestor's and its own, its agent path is the ancestors'
    /// names and its own, and it counts toward the nesting limit (`Runtime::max_depth`): opening
    /// one past the limit is [`Error::DepthLimit`].
    pub fn sub_agent_effects(
        &self,
        lineage: Lineage<'_>,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
    ) -> Result<RunEffects, Error> {
        self.check_depth(&lineage)?;
        self.effects_with(agent, snapshot, Some(events), Some(lineage), None)
    }

    /// [`effects_streaming`](Self::effects_streaming), or [`sub_agent_effects`](Self::sub_agent_effects)
    /// with `lineage`, whose run-scope hooks and tool sources that are data are `scope` (built
    /// once with [`restore_scope`](Self::restore_scope) from `snapshot.hooks`) rather than built
    /// again from the snapshot.
    pub fn effects_scoped(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: UnboundedSender<RunEvent>,
        lineage: Option<Lineage<'_>>,
        scope: &StoredScope,
    ) -> Result<RunEffects, Error> {
        if let Some(lineage) = lineage {
            self.check_depth(&lineage)?;
        }
        self.effects_with(agent, snapshot, Some(events), lineage, Some(scope))
    }

    fn check_depth(&self, lineage: &Lineage<'_>) -> Result<(), Error> {
        let depth = lineage.ancestors.len() as u32;
        let limit = self.inner.limits.max_depth;
        if depth > limit {
            let path: Vec<&str> = lineage.ancestors.iter().map(|def| &*def.name).collect();
            return Err(Error::DepthLimit {
                path: path.join("/"),
                depth,
                limit,
            });
        }
        Ok(())
    }

    fn effects_with(
        &self,
        agent: &Arc<AgentDef>,
        snapshot: &RunSnapshot,
        events: Option<UnboundedSender<RunEvent>>,
        lineage: Option<Lineage<'_>>,
        scope: Option<&StoredScope>,
    ) -> Result<RunEffects, Error> {
        let restored;
        let scope = match scope {
            Some(scope) => scope,
            None if snapshot.hooks.is_empty() => {
                restored = StoredScope::default();
                &restored
            }
            None => {
                restored = self.restore_scope(&snapshot.hooks).map_err(|e| {
                    Error::other(format!("run `{}` cannot be opened: {e}", snapshot.run_id))
                })?;
                &restored
            }
        };
        let options = RunOptions {
            hooks: scope.hooks.clone(),
            stored_hooks: scope.records.clone(),
            tool_sources: scope.tool_sources.clone(),
            run_id: Some(snapshot.run_id.clone()),
            session_id: snapshot.session_id.clone(),
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
        };
        // The caller's engine records the run: this runtime's store is left out.
        let storeless;
        let runtime = if self.inner.store.is_some() {
            let mut inner = (*self.inner).clone();
            inner.store = None;
            storeless = Runtime {
                inner: Arc::new(inner),
            };
            &storeless
        } else {
            self
        };
        let nested = lineage.map(|lineage| (lineage, snapshot.parent_run_id.clone()));
        let mut driver = runtime.driver_under(agent, options, events, None, nested)?;
        let state = agent.initial_state.parse_json(snapshot.state.clone())?;
        driver.scope.ctx.take_state(state);
        driver.machine = RunMachine::restore(snapshot);
        // The pending turn is the assistant message in the history, not a copy of its calls:
        // hooks that read the turn see its text too.
        if let Some(copy) = driver.machine.pending.clone() {
            let turn = driver
                .machine
                .messages
                .iter_shared()
                .rev()
                .find(|m| {
                    matches!(m.as_ref(), Message::Assistant { .. })
                        && m.tool_calls() == copy.tool_calls()
                })
                .cloned();
            if let Some(turn) = turn {
                driver.machine.pending = Some(turn);
            }
        }
        driver.scope.ctx.set_step(snapshot.step);
        Ok(RunEffects { driver })
    }
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
        Ok(self.driver.scope.ctx.state_json()?)
    }

    /// The run's context, as its hooks and tools see it.
    pub fn context(&self) -> &RunContext {
        &self.driver.scope.ctx
    }

    /// The run's cancellation: cancelling it interrupts the effect under way at its next await
    /// point (tools and hooks see it on their context).
    pub fn cancellation(&self) -> CancellationToken {
        self.driver.scope.ctx.cancellation().clone()
    }

    /// Reports the messages of the history from index `from` on to MessageAdded hooks (messages
    /// the caller added to its machine without running hooks: the input, tool results, feedback).
    /// Their run events are the caller's: it added them.
    pub async fn report_added(&mut self, from: usize) -> Result<(), Error> {
        if !self.wants(Events::MESSAGE_ADDED) {
            return Ok(());
        }
        let added: Vec<Arc<Message>> = self
            .driver
            .machine
            .messages
            .iter_shared()
            .skip(from)
            .cloned()
            .collect();
        let scope = self.driver.scope.clone();
        nesting::inside(scope.ctx.clone(), async {
            for message in added {
                scope.hook(MessageAdded::new(message)).await?;
            }
            Ok(())
        })
        .await
    }

    /// Starts a new run: RunStart hooks (which may rewrite the input and the state), then the
    /// input is added to the history, with its MessageAdded hooks. Returns the input as hooks
    /// left it.
    pub async fn run_start(&mut self, input: String) -> Result<String, Error> {
        let d = &mut self.driver;
        let input = if d.scope.wants(Events::RUN_START) {
            let scope = d.scope.clone();
            nesting::inside(scope.ctx.clone(), scope.hook(RunStart { input }))
                .await?
                .input
        } else {
            input
        };
        let m = d.machine.add_user(input.clone());
        d.scope.added(m).await?;
        Ok(input)
    }

    /// Opens step `step` (which the caller's machine began): BeforeStep hooks may skip it or
    /// stop the run.
    pub async fn before_step(&mut self, step: u32) -> Result<StepOpening, Error> {
        let d = &mut self.driver;
        d.scope.ctx.set_step(step);
        d.machine.step = step;
        if !d.scope.wants(Events::BEFORE_STEP) {
            return Ok(StepOpening::Go);
        }
        let scope = d.scope.clone();
        let (ev, by) =
            nesting::inside(scope.ctx.clone(), scope.hook_decided(BeforeStep::new(step))).await?;
        Ok(match ev.decision() {
            None => StepOpening::Go,
            Some(StepDecision::Skip) => StepOpening::Skip,
            Some(decision) => StepOpening::Stop(stop_reason(decision, by.as_deref())),
        })
    }

    /// The model turn of step `step`: BeforeModel, the around-model middleware, the streamed
    /// call with its TextDelta and Thinking hooks, AfterModel (with the retries it asks for:
    /// their feedback joins the history, and the rejected responses' tokens the usage). Returns
    /// the response as hooks left it, for [`accept_turn`](Self::accept_turn).
    pub async fn model_turn(&mut self, step: u32) -> Result<ModelResponse, Error> {
        let d = &mut self.driver;
        d.scope.ctx.set_step(step);
        d.machine.step = step;
        let ctx = d.scope.ctx.clone();
        nesting::inside(ctx, d.model_phase(step)).await
    }

    /// The compaction phase of a step, before its model turn: when the agent compacts its
    /// history and the prompt passed its threshold, BeforeCompact, the summarising call (or the
    /// window's note), CompactError and AfterCompact, as in-process. Returns what it folded, for
    /// the caller to fold in its own copy of the history ([`Folded::apply`]).
    pub async fn compact(&mut self) -> Result<Option<Folded>, Error> {
        let d = &mut self.driver;
        if d.def.compaction.is_none() {
            return Ok(None);
        }
        let ctx = d.scope.ctx.clone();
        nesting::inside(ctx, Box::pin(d.compact_phase())).await
    }

    /// Accepts a model turn into the history (the machine gives its calls their ids), with its
    /// MessageAdded hooks.
    pub async fn accept_turn(&mut self, response: ModelResponse) -> Result<Arc<Message>, Error> {
        let d = &mut self.driver;
        let message = d.machine.accept_turn(response);
        let scope = d.scope.clone();
        nesting::inside(scope.ctx.clone(), scope.added(message.clone())).await?;
        Ok(message)
    }

    /// Runs call `index` of the pending turn: BeforeTool (which may rewrite, block, mock or ask
    /// for approval), the tool through the around-tool middleware within its time limit (a
    /// sub-agent runs here as a child run), then AfterTool or ToolError. With `decided`, a
    /// person's decision on the call (which waited for it): ApprovalResolved hooks see it
    /// first.
    ///
    /// # Errors
    /// A hook's failure (it fails the run), or no pending call at `index`.
    pub async fn tool_call(
        &mut self,
        index: usize,
        decided: Option<(PendingApproval, Decision)>,
    ) -> Result<CallOutcome, Error> {
        let d = &mut self.driver;
        let Some(turn) = d.machine.pending.clone() else {
            return Err(Error::other(
                "the run has no pending tool calls; run a model turn that calls tools first",
            ));
        };
        if index >= turn.tool_calls().len() {
            return Err(Error::other(format!(
                "the pending turn has {} calls, not {}",
                turn.tool_calls().len(),
                index + 1
            )));
        }
        if let Some((pending, decision)) = decided {
            d.decisions.insert(pending.call_id.clone(), decision);
            d.last_paused = Some(vec![pending]);
            let ctx = d.scope.ctx.clone();
            nesting::inside(ctx, d.resolved_by_person()).await?;
        }
        let ctx = d.scope.ctx.clone();
        let settled = nesting::inside(ctx, d.tool_call(&turn, index)).await;
        d.decisions.clear();
        Ok(match settled? {
            Settled::Done(result) => CallOutcome::Done(result),
            Settled::Pending(pending) => CallOutcome::Pending(pending),
            Settled::Stop { result, reason, .. } => CallOutcome::Stop { result, reason },
            Settled::SubAgent(request) => CallOutcome::SubAgent(*request),
        })
    }

    /// BeforeToolBatch hooks for the calls of the pending turn, when some hook wants them: the
    /// order the calls start in and the calls they blocked. `None` when no hook wants them or
    /// the run has no pending calls (the calls start in the model's order).
    pub async fn before_tool_batch(&mut self) -> Result<Option<BatchPlan>, Error> {
        let d = &mut self.driver;
        let turn = match d.machine.pending.clone() {
            Some(turn) if d.scope.wants(Events::BEFORE_TOOL_BATCH) => turn,
            _ => return Ok(None),
        };
        let scope = d.scope.clone();
        let batch =
            nesting::inside(scope.ctx.clone(), scope.hook(BeforeToolBatch::new(turn))).await?;
        Ok(Some(BatchPlan::of(&batch)))
    }

    /// AfterToolBatch hooks for the results of every call of the pending turn, in call order,
    /// before they join the history: returns them as the hooks left them.
    pub async fn after_tool_batch(
        &mut self,
        results: Vec<ToolResult>,
    ) -> Result<Vec<ToolResult>, Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::AFTER_TOOL_BATCH) {
            return Ok(results);
        }
        let scope = d.scope.clone();
        let ev =
            nesting::inside(scope.ctx.clone(), scope.hook(AfterToolBatch::new(results))).await?;
        Ok(ev.into_results())
    }

    /// The earliest deadline a hook set on the run with [`RunContext::stop_at`] while these
    /// effects ran (the built-in guards' wall time, for one), as a wall-clock time, and the stop
    /// it brings. The effects do not enforce it: the caller's engine stops the run at that time,
    /// interrupting what is in flight, as in-process.
    ///
    /// [`RunContext::stop_at`]: agentry_core::RunContext::stop_at
    pub fn deadline(&self) -> Option<(SystemTime, StopReason)> {
        let (at, stop) = self.driver.scope.ctx.stop_deadline()?;
        let now = Instant::now();
        let wall = match at.checked_duration_since(now) {
            Some(ahead) => SystemTime::now() + ahead,
            None => SystemTime::now() - now.duration_since(at),
        };
        Some((wall, stop))
    }

    /// From now on, a call of a sub-agent settles as [`CallOutcome::SubAgent`] once its BeforeTool
    /// and BeforeSubAgent hooks ran, instead of running the sub-agent here: the caller runs it
    /// (a durable engine, as a run of its own) and closes the call with
    /// [`sub_agent_finished`](Self::sub_agent_finished).
    pub fn delegate_sub_agents(&mut self) {
        self.driver.delegate_sub_agents = true;
    }

    /// Closes call `index` of the pending turn, a sub-agent call handed over as `request`, with
    /// how the sub-agent's run ended: AfterSubAgent or SubAgentError hooks, then AfterTool or
    /// ToolError, as when the sub-agent runs in-process.
    ///
    /// # Errors
    /// A hook's failure (it fails the run), or no pending call at `index`.
    pub async fn sub_agent_finished(
        &mut self,
        index: usize,
        request: SubAgentRequest,
        outcome: SubAgentOutcome,
    ) -> Result<CallOutcome, Error> {
        let d = &mut self.driver;
        let turn = match d.machine.pending.clone() {
            Some(turn) if index < turn.tool_calls().len() => turn,
            _ => {
                return Err(Error::other(format!(
                    "the run has no pending call {}; run the sub-agent call's turn first",
                    index + 1
                )));
            }
        };
        let ctx = d.scope.ctx.clone();
        let settled = nesting::inside(ctx, d.sub_agent_finished(&turn, index, request, outcome));
        Ok(match settled.await? {
            Settled::Done(result) => CallOutcome::Done(result),
            Settled::Pending(pending) => CallOutcome::Pending(pending),
            Settled::Stop { result, reason, .. } => CallOutcome::Stop { result, reason },
            Settled::SubAgent(request) => CallOutcome::SubAgent(*request),
        })
    }

    /// Ends step `step`: AfterStep hooks, which may stop the run (the stop reason).
    pub async fn end_step(&mut self, step: u32) -> Result<Option<StopReason>, Error> {
        let d = &mut self.driver;
        d.scope.ctx.set_step(step);
        let ctx = d.scope.ctx.clone();
        nesting::inside(ctx, d.end_step(step, false)).await
    }

    /// Stop hooks for `reason` (with the final answer when the run stops with one): returns the
    /// message a hook vetoed a natural stop with, if one did.
    pub async fn stop(
        &mut self,
        reason: StopReason,
        output: Option<&Value>,
    ) -> Result<Option<String>, Error> {
        let d = &mut self.driver;
        let ctx = d.scope.ctx.clone();
        nesting::inside(ctx, d.stop_event(reason, output)).await
    }

    /// RunError hooks for a run that failed with `error`: the output and stop reason when a
    /// hook recovered, else `None` (the run fails with `error`).
    pub async fn recover(&mut self, error: Error) -> Result<Option<(Value, StopReason)>, Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::RUN_ERROR) {
            return Ok(None);
        }
        let error = Arc::new(error);
        let scope = d.scope.clone();
        let (ev, by) = nesting::inside(
            scope.ctx.clone(),
            scope.hook_decided(RunError::new(error.clone())),
        )
        .await?;
        Ok(ev.recovery().map(|output| {
            let stop = StopReason::Recovered {
                hook: by.as_deref().unwrap_or_default().to_string(),
                error: error.to_string(),
            };
            (output.clone(), stop)
        }))
    }

    /// RunEnd hooks, once the run's outcome is recorded.
    pub async fn run_end(&mut self, stop: StopReason, output: Option<Value>) -> Result<(), Error> {
        let d = &mut self.driver;
        if !d.scope.wants(Events::RUN_END) {
            return Ok(());
        }
        let ev = RunEnd::new(stop, output, d.machine.usage, d.machine.step);
        let scope = d.scope.clone();
        nesting::inside(scope.ctx.clone(), scope.hook(ev)).await?;
        Ok(())
    }
}
