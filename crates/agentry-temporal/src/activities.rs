//! The activities: each runs one effect of a run with the in-process runtime's own code
//! ([`agentry_runtime::effects`]), with its hooks, on a worker that hosts the run's agent.
//!
//! Every activity heartbeats each second, so a worker that dies is noticed within the run's
//! heartbeat limit and the activity is retried elsewhere; a cancelled activity cancels the
//! effect under way (tools and hooks see it on their context). A hook's failure is not an
//! activity failure: it is the activity's result (recorded, never retried), and it fails the
//! run as it does in-process.

use crate::cache::{Checked, HistoryCache};
use crate::events::{Recording, WireEvent};
use crate::scopes::ScopeCache;
use crate::wire::{
    BatchInput, BeginInput, Begun, Deadline, Done, Effect, EndStepInput, Ending, Failure, Finish,
    FinishInput, ModelStep, Opening, RunPlan, RunView, StepInput, SubAgentDone, ToolInput,
};
use crate::workflow::AgentRun;
use agentry_core::machine::StepClosed;
use agentry_core::{
    AgentDef, AgentTool, Error, RunEngine, RunEvent, RunSnapshot, StopReason, ToolResult,
};
use agentry_runtime::Runtime;
use agentry_runtime::effects::{CallOutcome, Lineage, RunEffects, StepOpening};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use temporalio_client::WorkflowQueryOptions;
use temporalio_common::error::ApplicationFailure;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

/// How often a running activity heartbeats.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// The agents a worker hosts, and the runtime whose hooks, default model and limits their runs
/// use.
pub(crate) struct Hosted {
    /// The runtime.
    pub runtime: Runtime,
    /// The agents, by name.
    pub agents: HashMap<String, Arc<AgentDef>>,
}

/// The activities of agentry runs.
pub(crate) struct AgentActivities {
    /// What the worker hosts.
    pub hosted: Arc<Hosted>,
    /// The histories of the runs this worker ran activities of lately.
    pub cache: Arc<HistoryCache>,
    /// Their run-scope hooks and tool sources that are data, built again.
    pub scopes: Arc<ScopeCache>,
    /// The worker's client, to ask a run's workflow for its history on a cache miss.
    pub client: temporalio_client::Client,
}

impl AgentActivities {
    /// The agents of the agent path `path` (`root` or `root/child/...`), from the hosted root
    /// agent down to the path's last, or the error that says this worker does not host it.
    fn lineage(&self, path: &str) -> Result<Vec<Arc<AgentDef>>, ActivityError> {
        let mut names = path.split('/');
        let root = names.next().unwrap_or_default();
        let root = self.hosted.agents.get(root).cloned().ok_or_else(|| {
            let mut known: Vec<&str> = self.hosted.agents.keys().map(String::as_str).collect();
            known.sort_unstable();
            non_retryable(format!(
                "this worker hosts no agent `{root}` (it hosts: {}); register it with `Worker::agent`",
                known.join(", ")
            ))
        })?;
        let mut lineage = vec![root];
        for name in names {
            let parent = lineage.last().expect("the lineage starts with the root");
            let child = parent.tools.iter().find_map(|tool| match tool {
                AgentTool::SubAgent { agent, .. } if &*agent.name == name => Some(agent.clone()),
                _ => None,
            });
            let child = child.ok_or_else(|| {
                non_retryable(format!(
                    "agent `{}` on this worker has no sub-agent `{name}` (the run's agent path is `{path}`); every worker must host the same agents",
                    parent.name
                ))
            })?;
            lineage.push(child);
        }
        Ok(lineage)
    }

    /// The history `run` describes: from this worker's cache, or (when it does not have the
    /// run as its last activity left it) from the run's workflow, with a query.
    async fn history(&self, run: &RunView) -> Result<Checked, ActivityError> {
        let run_id = &run.snapshot.run_id;
        if let Some(checked) = self.cache.complete(run_id, &run.history) {
            return Ok(checked);
        }
        let messages = self
            .client
            .get_workflow_handle::<AgentRun>(run_id)
            .query(
                AgentRun::history,
                run.history.len,
                WorkflowQueryOptions::default(),
            )
            .await
            .map_err(|e| {
                retryable(format!(
                    "asking run `{run_id}`'s workflow for its history failed ({e}); the activity is retried"
                ))
            })?;
        HistoryCache::check(messages, &run.history).ok_or_else(|| {
            retryable(format!(
                "run `{run_id}`'s workflow gave a history that does not match the activity's; the activity is retried"
            ))
        })
    }

    /// The effects of the run `run` describes, the history they start from, and the run events
    /// they send.
    async fn open(&self, run: RunView) -> Result<(RunEffects, Checked, Collected), ActivityError> {
        let given = self.history(&run).await?;
        let mut snapshot = run.snapshot;
        snapshot.messages = given.history.clone();
        let lineage = self.lineage(&snapshot.agent)?;
        let root = run.root_run_id.as_deref().unwrap_or(&snapshot.run_id);
        let (effects, events) = self
            .effects(&lineage, root, &snapshot)
            .map_err(|e| non_retryable(e.to_string()))?;
        Ok((effects, given, events))
    }

    /// The effects of `snapshot`'s run of the last agent of `lineage` (under the run
    /// `root_run_id`, for a sub-agent's run), and the run events they send. Its sub-agent calls
    /// are handed to the workflow, which runs them as child workflows.
    fn effects(
        &self,
        lineage: &[Arc<AgentDef>],
        root_run_id: &str,
        snapshot: &RunSnapshot,
    ) -> Result<(RunEffects, Collected), Error> {
        let (sender, events) = futures::channel::mpsc::unbounded();
        let runtime = &self.hosted.runtime;
        let (def, lineage) = match lineage {
            [def] => (def, None),
            [ancestors @ .., def] => (
                def,
                Some(Lineage {
                    ancestors,
                    root_run_id,
                }),
            ),
            [] => return Err(Error::other("a run names no agent")),
        };
        let mut effects = if snapshot.hooks.is_empty() {
            match lineage {
                None => runtime.effects_streaming(def, snapshot, sender)?,
                Some(lineage) => runtime.sub_agent_effects(lineage, def, snapshot, sender)?,
            }
        } else {
            let scope = self
                .scopes
                .scope(&snapshot.run_id, &snapshot.hooks, runtime)
                .map_err(|e| Error::other(format!("run `{}`: {e}", snapshot.run_id)))?;
            runtime.effects_scoped(def, snapshot, sender, lineage, &scope)?
        };
        effects.delegate_sub_agents();
        Ok((
            effects,
            Collected {
                events,
                recording: Recording::default(),
            },
        ))
    }

    /// Keeps the history `effects` left as `given`'s run's, for its next activity.
    fn keep(&self, run_id: &str, effects: &RunEffects, given: Checked) {
        self.cache.store(run_id, given, &effects.machine().messages);
    }
}

/// The run events an activity's effects sent, for its result.
struct Collected {
    events: futures::channel::mpsc::UnboundedReceiver<RunEvent>,
    recording: Recording,
}

impl Collected {
    /// The events sent so far, in their recorded form.
    fn take(&mut self) -> Vec<WireEvent> {
        let mut out = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            self.recording.push(&mut out, WireEvent::Run(event));
        }
        out
    }
}

/// An activity failure that is retried: a passing problem.
fn retryable(message: String) -> ActivityError {
    ActivityError::from(std::io::Error::other(message))
}

/// An activity failure that is not retried: a configuration error retrying cannot fix.
fn non_retryable(message: String) -> ActivityError {
    ActivityError::application(ApplicationFailure::non_retryable(std::io::Error::other(
        message,
    )))
}

/// What may end an effect early, besides its activity's cancellation.
#[derive(Clone, Copy, PartialEq)]
enum Ends {
    /// Only its own end: the run's last effect runs to its end whatever its hooks set.
    WithEffect,
    /// A deadline a hook sets on the run during the effect, when it passes.
    AtDeadline,
}

/// Runs `effect`, heartbeating meanwhile. A cancelled activity cancels the run's context `run`
/// and drops the effect; so does a deadline a hook sets on the run during the effect
/// (`RunContext::stop_at`) when it passes, if `ends` says so, and the activity settles with it,
/// for the workflow to stop the run.
async fn heartbeating<T>(
    ctx: &ActivityContext,
    run: RunEngine,
    ends: Ends,
    effect: impl Future<Output = Result<Done<T>, Error>>,
) -> Result<Effect<T>, ActivityError> {
    let mut effect = std::pin::pin!(effect);
    let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tokio::select! {
            biased;
            outcome = &mut effect => return Ok(outcome.map_err(|e| masked(Failure::of(&e), &run))),
            () = ctx.cancelled() => {
                run.context().cancellation().cancel();
                return Err(ActivityError::cancelled());
            }
            stop = run.deadline_passed(), if ends == Ends::AtDeadline => {
                run.context().cancellation().cancel();
                let deadline = Deadline::new(std::time::SystemTime::now(), stop);
                return Ok(Err(Failure::interrupted(deadline)));
            }
            _ = beat.tick() => {
                // A heartbeat that cannot be encoded is not worth failing the effect over: the
                // heartbeat limit reports a worker that stopped sending them.
                let _ = ctx.record_heartbeat(()).await;
            }
        }
    }
}

#[activities]
impl AgentActivities {
    /// Starts a run: checks the agent can run here, RunStart hooks, and the run's plan.
    #[activity(name = "agentry.begin")]
    pub(crate) async fn begin(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: BeginInput,
    ) -> Result<Effect<Begun>, ActivityError> {
        let lineage = self.lineage(&input.request.agent)?;
        let def = lineage
            .last()
            .expect("a lineage ends with its agent")
            .clone();
        let state = def
            .initial_state
            .to_json()
            .map_err(|e| non_retryable(format!("the agent's initial state: {e}")))?;
        let request = &input.request;
        // A fork starts from the snapshot it was given: its state and step (the workflow keeps
        // its history).
        let snapshot = match &request.forked {
            Some(forked) => RunSnapshot {
                run_id: input.run_id.clone(),
                ..(**forked).clone()
            },
            None => RunSnapshot {
                parent_run_id: request.parent.as_ref().map(|p| p.run_id.clone()),
                session_id: request.session_id.clone(),
                user_id: request.user_id.clone(),
                tags: request.tags.clone(),
                metadata: request.metadata.clone(),
                state,
                hooks: request.hooks.clone(),
                ..RunSnapshot::new(&input.run_id, &request.agent)
            },
        };
        let forked = request.forked.is_some();
        let root = match &request.parent {
            Some(parent) => parent.root_run_id.as_str(),
            None => input.run_id.as_str(),
        };
        let (mut effects, mut events) = match self.effects(&lineage, root, &snapshot) {
            Ok(opened) => opened,
            // Nesting past the limit fails the run (and its parent), as in-process.
            Err(e @ Error::DepthLimit { .. }) => return Ok(Err(Failure::of(&e))),
            Err(e) => return Err(non_retryable(e.to_string())),
        };
        let run = effects.engine().clone();
        let this = self.clone();
        let run_id = input.run_id.clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            let input = if forked {
                effects.forked_start();
                agentry_core::Content::new()
            } else {
                effects.run_start(input.request.input).await?
            };
            let def = effects.def();
            let plan = RunPlan {
                wants: effects.wanted().bits(),
                max_steps: def.max_steps,
                output_schema: def.output.as_ref().map(|o| (*o.schema).clone()),
                output_retries: def.output_retries,
                parallel_tool_calls: def.parallel_tool_calls,
            };
            // A fork's history goes to its next activity whole (the workflow's ledger starts
            // from nothing), so only a new run's is kept.
            if !forked {
                this.keep(&run_id, &effects, Checked::empty());
            }
            done(Begun { input, plan }, &effects, &mut events)
        })
        .await
    }

    /// A model step: MessageAdded for what the workflow added, BeforeStep, then the model turn
    /// with its hooks, accepted into the history with MessageAdded.
    #[activity(name = "agentry.model_step")]
    pub(crate) async fn model_step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<Effect<ModelStep>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, given, mut events) = self.open(input.run).await?;
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            effects.report_added(input.report_from).await?;
            let opening = match effects.before_step(input.step).await? {
                StepOpening::Go => Opening::Go,
                StepOpening::Skip => Opening::Skip,
                StepOpening::Stop(stop) => Opening::Stop(stop),
            };
            let opened = events.take();
            let folded = match opening {
                Opening::Go => effects.compact().await?,
                _ => None,
            };
            let before = effects.machine().messages.len();
            let response = if opening == Opening::Go {
                Some(effects.model_turn(input.step).await?)
            } else {
                None
            };
            let machine = effects.machine();
            let added = machine
                .messages
                .iter()
                .skip(before)
                .cloned()
                .collect::<Vec<_>>();
            let (usage, retried_usage) = (machine.usage, machine.retried_usage);
            let mut batch = None;
            if let Some(response) = &response {
                effects.accept_turn(response.clone()).await?;
                batch = effects.before_tool_batch().await?;
            }
            self.keep(&run_id, &effects, given);
            let step = ModelStep {
                opening,
                opened,
                folded,
                added,
                usage,
                retried_usage,
                response,
                batch,
            };
            done(step, &effects, &mut events)
        })
        .await
    }

    /// One tool call of the pending turn, with its hooks (and a person's decision).
    #[activity(name = "agentry.tool_call")]
    pub(crate) async fn tool_call(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolInput,
    ) -> Result<Effect<CallOutcome>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, given, mut events) = self.open(input.run).await?;
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            let outcome = effects.tool_call(input.index, input.decided).await?;
            self.keep(&run_id, &effects, given);
            done(outcome, &effects, &mut events)
        })
        .await
    }

    /// Closes a sub-agent call with how its child workflow ended: AfterSubAgent or
    /// SubAgentFailed, then AfterTool or ToolFailed.
    #[activity(name = "agentry.sub_agent_done")]
    pub(crate) async fn sub_agent_done(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: SubAgentDone,
    ) -> Result<Effect<CallOutcome>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, given, mut events) = self.open(input.run).await?;
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            let outcome = effects
                .sub_agent_finished(input.index, input.request, input.outcome)
                .await?;
            self.keep(&run_id, &effects, given);
            done(outcome, &effects, &mut events)
        })
        .await
    }

    /// AfterToolBatch hooks for the results of every call of the pending turn.
    #[activity(name = "agentry.tool_batch_done")]
    pub(crate) async fn tool_batch_done(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: BatchInput,
    ) -> Result<Effect<Vec<ToolResult>>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, given, mut events) = self.open(input.run).await?;
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            let results = effects.after_tool_batch(input.results).await?;
            self.keep(&run_id, &effects, given);
            done(results, &effects, &mut events)
        })
        .await
    }

    /// The end of a step: MessageAdded for what the workflow added, AfterStep, and Stop hooks
    /// for a final answer (which may veto it).
    #[activity(name = "agentry.end_step")]
    pub(crate) async fn end_step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: EndStepInput,
    ) -> Result<Effect<StepClosed>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, given, mut events) = self.open(input.run).await?;
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::AtDeadline, async move {
            effects.report_added(input.report_from).await?;
            let stop = effects.end_step(input.step, input.usage).await?;
            let veto = match &input.final_output {
                Some(output) => effects.stop(StopReason::FinalAnswer, Some(output)).await?,
                None => None,
            };
            self.keep(&run_id, &effects, given);
            done(StepClosed { stop, veto }, &effects, &mut events)
        })
        .await
    }

    /// The end of a run, or of its course until a person decides: MessageAdded for what the
    /// workflow added, Stop hooks for a reason they have not seen, RunFailed hooks for a failure
    /// (which may recover), RunEnd.
    #[activity(name = "agentry.finish")]
    pub(crate) async fn finish(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: FinishInput,
    ) -> Result<Effect<Finish>, ActivityError> {
        let run_id = input.run.snapshot.run_id.clone();
        let (mut effects, _given, mut events) = self.open(input.run).await?;
        if !input.paused {
            self.cache.forget(&run_id);
            self.scopes.forget(&run_id);
        }
        let run = effects.engine().clone();
        heartbeating(&ctx, run, Ends::WithEffect, async move {
            effects.report_added(input.report_from).await?;
            if let Some(reason) = input.stop_event {
                // Only a natural stop (a final answer) can be vetoed; this is not one.
                effects.stop(reason, None).await?;
            }
            let (stop, output) = match input.ending {
                Ending::Stopped { stop, output } => (stop, output),
                Ending::Failed(error) => {
                    match effects.recover(Error::other(error.clone())).await? {
                        Some((output, stop)) => (stop, Some(output)),
                        None => return Err(Error::other(error)),
                    }
                }
            };
            effects.run_end(stop.clone(), output.clone()).await?;
            // The run ends: a deadline no longer matters.
            let mut finish = done(Finish { stop, output }, &effects, &mut events)?;
            finish.deadline = None;
            Ok(finish)
        })
        .await
    }
}

/// What an effect gave, `value`, with the run's state after it, the events it sent and the
/// deadline a hook set on the run meanwhile (in its recorded form).
fn done<T>(value: T, effects: &RunEffects, events: &mut Collected) -> Result<Done<T>, Error> {
    Ok(Done {
        value,
        state: effects.state()?,
        events: events.take(),
        deadline: effects.deadline().map(|(at, stop)| Deadline::new(at, stop)),
    })
}

/// `failure` with its error masked by the worker's redactor: the error is recorded in the run's
/// history, and the run's failure carries it, as the in-process store keeps a failed run's
/// error masked.
fn masked(mut failure: Failure, run: &RunEngine) -> Failure {
    if let Some(redactor) = run.redactor()
        && let std::borrow::Cow::Owned(error) = redactor.redact(&failure.error)
    {
        failure.error = error;
    }
    failure
}
