//! The workflow: executes the effects the step machine ([`RunMachine`]) asks for, as the
//! in-process runtime does, each phase an activity ([`crate::activities`]). The machine decides
//! the run's course with nothing but what the activities returned (recorded in the run's
//! history), so a replay on any worker decides the same.

use crate::activities::AgentActivities;
use crate::events::WireEvent;
use crate::ledger::Ledger;
use crate::wire::{
    BatchDone, BatchInput, BeginInput, Carried, CarriesDeadline, Deadline, Effect, EndStepInput,
    Ending, EventPage, Failure, Finish, FinishInput, FinishedRun, Identity, Limits, ModelStep,
    Opening as StepOpened, ParentRun, Placement, RunPlan, RunRequest, RunResult, RunView, Settled,
    StepEnd, StepInput, SubAgentDone, ToolDone, ToolInput,
};
use agentry::effects::{SubAgentOutcome, SubAgentRequest};
use agentry_core::hooks::Events;
use agentry_core::run::machine::{
    Ending as MachineEnding, Interruption, Next, Opening, Rules, StepClosed, ToolsRan,
};
use agentry_core::{
    Decision, History, Message, OutputSpec, PendingApproval, RunEvent, RunMachine, StopReason,
    ToolResult, match_decisions,
};
use futures::future::Either;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use temporalio_common::ActivityDefinition;
use temporalio_common::data_converters::TemporalDeserializable;
use temporalio_common::error::ActivityExecutionError;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ChildWorkflowOptions, ContinueAsNewOptions, LocalActivityOptions,
    SyncWorkflowContext, TimerOptions, WorkflowCancellationToken, WorkflowContext,
    WorkflowContextView, WorkflowResult,
};

/// The workflow type's name.
pub(crate) const WORKFLOW_TYPE: &str = "agentry.run";

/// One run. Its fields are what queries and updates see; the loop keeps the rest.
#[workflow]
#[derive(Default)]
pub(crate) struct AgentRun {
    /// The calls waiting for a person's decision.
    awaiting: Vec<PendingApproval>,
    /// The decisions an update delivered, until the loop takes them.
    decisions: Option<Vec<Decision>>,
    /// The history as the last activity scheduled was given it (for [`AgentRun::history`]).
    history: History,
    /// The run's events this execution recorded (for [`AgentRun::events`]).
    events: Vec<WireEvent>,
    /// The position of its first: how many the executions the run continued from recorded.
    events_base: usize,
    /// The earliest deadline a hook set on the run (`RunContext::stop_at`).
    deadline: Option<Deadline>,
}

#[workflow_methods]
impl AgentRun {
    /// Runs the agent the request names to the end.
    #[run(name = "agentry.run")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        request: RunRequest,
    ) -> WorkflowResult<RunResult> {
        let run_id = ctx.workflow_id().to_string();
        let mut request = request;
        let carried = request.carried.take();
        let mut run = Loop {
            ctx: ctx.clone(),
            id: Identity::of(&run_id, &request),
            limits: request.limits,
            placement: request.placement,
            continue_after: request.continue_after,
            first_step: 0,
            machine: RunMachine::new(),
            state: Value::Null,
            reported: 0,
            plan: RunPlan::default(),
            ledger: Ledger::default(),
            fails_parent: false,
            interrupt: ctx.cancellation_token().child_token(),
        };
        let raced = {
            let work = std::pin::pin!(async {
                match carried {
                    Some(carried) => {
                        run.resume(*carried);
                        run.steps().await
                    }
                    None => {
                        run.emit(RunEvent::RunStarted {
                            run_id: run_id.clone(),
                            agent_path: run.id.agent.as_str().into(),
                        });
                        run.body(request.clone()).await
                    }
                }
            });
            let deadline = std::pin::pin!(deadline_passed(ctx.clone()));
            match futures::future::select(deadline, work).await {
                Either::Left((stop, _work)) => Err(stop),
                Either::Right((outcome, _)) => Ok(outcome),
            }
        };
        let outcome = match raced {
            Ok(Err(Exit::Deadline(stop))) | Err(stop) => {
                // What is in flight (activities, child runs) is cancelled and dropped.
                run.interrupt.cancel();
                run.stopped_at_deadline(stop.clone());
                Err(Exit::Deadline(stop))
            }
            Ok(outcome) => outcome,
        };
        let child = request.parent.is_some();
        let result = match outcome {
            Err(Exit::Continue) => {
                let next = RunRequest {
                    input: String::new(),
                    carried: Some(Box::new(run.carry())),
                    ..request
                };
                return match ctx.continue_as_new(next, ContinueAsNewOptions::default()) {
                    Err(termination) => Err(termination),
                };
            }
            Ok(ending) => run.finish(None, ending).await,
            Err(Exit::Stop(stop)) => {
                let ending = Ending::Stopped {
                    stop: stop.clone(),
                    output: None,
                };
                run.finish(Some(stop), ending).await
            }
            Err(Exit::Failed(failure)) => {
                run.fails_parent = failure.fails_parent;
                run.finish(None, Ending::Failed(failure.error)).await
            }
            Err(Exit::Cancelled) => run.cancelled().await,
            Err(Exit::Deadline(stop)) => {
                let ending = Ending::Stopped {
                    stop: stop.clone(),
                    output: None,
                };
                // Its own token: the run's interruption must not cancel its end.
                run.finish_with(Some(stop), ending, Some(ctx.cancellation_token()))
                    .await
            }
        };
        Ok(match child {
            true => RunResult::Child {
                result: Box::new(result),
                events: ctx.state(|s| s.events.clone()),
                from: ctx.state(|s| s.events_base),
            },
            false => result,
        })
    }

    /// The calls waiting for a person's decision.
    #[query]
    pub(crate) fn pending(&self, _ctx: &WorkflowContextView) -> Vec<PendingApproval> {
        self.awaiting.clone()
    }

    /// The first `upto` messages of the run's history: what an activity whose worker does not
    /// have the run's history asks for ([`crate::ledger`]).
    #[query]
    pub(crate) fn history(&self, _ctx: &WorkflowContextView, upto: usize) -> Vec<Message> {
        self.history.iter().take(upto).cloned().collect()
    }

    /// The run's events from position `from` on, as far as this execution keeps them.
    #[query]
    pub(crate) fn events(&self, _ctx: &WorkflowContextView, from: usize) -> EventPage {
        let from = from.clamp(self.events_base, self.events_base + self.events.len());
        EventPage {
            from,
            events: self
                .events
                .iter()
                .skip(from - self.events_base)
                .cloned()
                .collect(),
        }
    }

    /// Checks decisions before they are accepted: one for each waiting call, nothing else.
    #[update_validator(decide)]
    // The SDK's macro passes the update's input type by reference.
    #[allow(clippy::ptr_arg)]
    fn validate_decide(
        &self,
        _ctx: &WorkflowContextView,
        decisions: &Vec<Decision>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        check_decisions(&self.awaiting, decisions).map_err(Into::into)
    }

    /// Decides the waiting calls; the run goes on with them.
    #[update]
    pub(crate) fn decide(
        &mut self,
        _ctx: &mut SyncWorkflowContext<Self>,
        decisions: Vec<Decision>,
    ) {
        self.decisions = Some(decisions);
    }
}

/// Checks that `decisions` decide every call of `pending` once, and nothing else.
pub(crate) fn check_decisions(
    pending: &[PendingApproval],
    decisions: &[Decision],
) -> Result<(), String> {
    match_decisions(pending, decisions.iter().cloned())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Why the loop ended before its natural end.
enum Exit {
    /// A stop whose Stop hooks have not run.
    Stop(StopReason),
    /// The run failed.
    Failed(Failure),
    /// The workflow was cancelled.
    Cancelled,
    /// The run goes on in a new execution (its history grew long).
    Continue,
    /// A deadline a hook set passed mid-run: the calls under way were closed; Stop and RunEnd
    /// hooks have not run.
    Deadline(StopReason),
}

/// The loop of one run and what it holds between activities.
struct Loop {
    ctx: WorkflowContext<AgentRun>,
    id: Identity,
    limits: Limits,
    placement: Placement,
    /// How many events the history may reach before the run continues as a new execution.
    continue_after: u32,
    /// The step this execution started after.
    first_step: u32,
    machine: RunMachine,
    state: Value,
    /// How many messages of the history MessageAdded hooks have seen.
    reported: usize,
    plan: RunPlan,
    /// The history's digests, and how much of it the last activity left.
    ledger: Ledger,
    /// The run failed in a way that fails its parent too.
    fails_parent: bool,
    /// Cancels what is in flight (activities, child runs): cancelled with the workflow, or when
    /// the run's deadline passes.
    interrupt: WorkflowCancellationToken,
}

impl Loop {
    fn wants(&self, events: Events) -> bool {
        Events::from_bits_truncate(self.plan.wants).intersects(events)
    }

    /// Runs one phase as an activity within `limit`: scheduled, or local when the run's
    /// placement says so for this phase (`hooks_only`: a phase that runs hooks and nothing
    /// else). `token` cancels it instead of the workflow's cancellation.
    async fn activity<AD>(
        &self,
        activity: AD,
        input: AD::Input,
        limit: Duration,
        hooks_only: bool,
        token: Option<WorkflowCancellationToken>,
    ) -> Result<AD::Output, ActivityExecutionError>
    where
        AD: ActivityDefinition,
        AD::Output: TemporalDeserializable + CarriesDeadline,
    {
        let token = Some(token.unwrap_or_else(|| self.interrupt.clone()));
        let outcome = if self.placement.is_local(hooks_only) {
            let opts = LocalActivityOptions::builder()
                .start_to_close_timeout(limit)
                .maybe_cancellation_token(token)
                .build();
            self.ctx.execute_local_activity(activity, input, opts).await
        } else {
            let mut opts = ActivityOptions::with_start_to_close_timeout(limit)
                .heartbeat_timeout(self.limits.heartbeat)
                .build();
            opts.cancellation_token = token;
            self.ctx.execute_activity(activity, input, opts).await
        };
        // Noted at once, for the deadline's timer: other activities may still be under way.
        if let Ok(done) = &outcome {
            self.note_deadline(done.deadline().cloned());
        }
        outcome
    }

    /// The run as the next activity receives it; its whole history is published to the
    /// [`AgentRun::history`] query for a worker that does not have it.
    fn view(&mut self) -> RunView {
        let messages = self.machine.messages.clone();
        self.ctx.state_mut(|s| s.history = messages);
        self.id.view(&self.machine, &self.state, &mut self.ledger)
    }

    /// Takes up the run as the execution it continues left it.
    fn resume(&mut self, carried: Carried) {
        self.machine = RunMachine::restore(&carried.snapshot);
        self.state = carried.snapshot.state;
        self.plan = carried.plan;
        self.reported = carried.reported;
        self.first_step = self.machine.step;
        self.ledger = Ledger::resumed(&self.machine.messages, carried.synced);
        self.ctx.state_mut(|s| {
            s.events_base = carried.events;
            s.deadline = carried.deadline;
        });
    }

    /// Notes a deadline an activity's hooks set: the earliest stands.
    fn note_deadline(&self, deadline: Option<Deadline>) {
        if deadline.is_some() {
            self.ctx
                .state_mut(|s| s.deadline = Deadline::earliest(s.deadline.take(), deadline));
        }
    }

    /// Ends the run as the in-process runtime does when a deadline passes mid-run: the calls of
    /// the turn under way that have no result get an error result saying why, so the history
    /// stays well-formed; the step under way counts.
    fn stopped_at_deadline(&mut self, stop: StopReason) {
        let from = self.machine.messages.len();
        let _ = self.machine.interrupt(Interruption::Deadline(stop));
        self.added_from(from);
    }

    /// Records a run event of the run's course.
    fn emit(&self, event: impl Into<WireEvent>) {
        let event = event.into();
        self.ctx.state_mut(|s| s.events.push(event));
    }

    /// Records the events an activity's effects sent.
    fn absorb(&self, events: Vec<WireEvent>) {
        if !events.is_empty() {
            self.ctx.state_mut(|s| s.events.extend(events));
        }
    }

    /// Records `Message` events for the messages of the history from index `from` on: those
    /// the workflow added itself (tool results, feedback).
    fn added_from(&self, from: usize) {
        let history = &self.machine.messages;
        if from >= history.len() {
            return;
        }
        let agent_path: Arc<str> = self.id.agent.as_str().into();
        let events: Vec<WireEvent> = (from..history.len())
            .filter_map(|i| history.get_shared(i))
            .map(|m| {
                WireEvent::Run(RunEvent::Message {
                    message: m.clone(),
                    agent_path: agent_path.clone(),
                })
            })
            .collect();
        self.absorb(events);
    }

    /// Records the step's end when no activity did (one that runs AfterStep hooks does).
    fn step_finished(&self, step: u32) {
        self.emit(RunEvent::StepFinished {
            step,
            agent_path: self.id.agent.as_str().into(),
        });
    }

    /// What the next execution needs to take up the run.
    fn carry(&self) -> Carried {
        Carried {
            snapshot: self
                .id
                .snapshot(&self.machine, &self.state, self.machine.messages.clone()),
            plan: self.plan.clone(),
            reported: self.reported,
            synced: self.ledger.synced(),
            events: self.ctx.state(|s| s.events_base + s.events.len()),
            deadline: self.ctx.state(|s| s.deadline.clone()),
        }
    }

    /// True when the run should continue as a new execution before its next step: this
    /// execution took a step, and its history reached the threshold or Temporal suggests it.
    fn should_continue(&self) -> bool {
        self.machine.step > self.first_step
            && (self.ctx.history_length() >= self.continue_after
                || self.ctx.continue_as_new_suggested())
    }

    /// Notes that the last activity's worker keeps the history as it now stands.
    fn synced(&mut self) {
        self.ledger.sync(&self.machine.messages);
    }

    fn cancelled_now(&self) -> bool {
        self.ctx.cancellation_token().is_cancelled()
    }

    /// Unwraps an activity's outcome: the effect's, or why the loop ends.
    fn settle<T>(outcome: Result<Effect<T>, ActivityExecutionError>) -> Result<T, Exit> {
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Failure {
                deadline: Some(deadline),
                ..
            })) => Err(Exit::Deadline(deadline.stop)),
            Ok(Err(failure)) => Err(Exit::Failed(failure)),
            Err(ActivityExecutionError::Cancelled(_)) => Err(Exit::Cancelled),
            Err(e) => Err(Exit::Failed(Failure::own(match e.cause() {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            }))),
        }
    }

    async fn body(&mut self, request: RunRequest) -> Result<Ending, Exit> {
        let input = BeginInput {
            run_id: self.id.run_id.clone(),
            request,
        };
        let begun = Self::settle(
            self.activity(AgentActivities::begin, input, self.limits.hooks, true, None)
                .await,
        )?;
        self.plan = begun.plan;
        self.state = begun.state;
        self.absorb(begun.events);
        self.machine.add_user(begun.input);
        self.synced();
        // The begin activity reported the input to MessageAdded hooks.
        self.reported = self.machine.messages.len();
        self.steps().await
    }

    /// The rules the run's machine applies, from the run's plan.
    fn rules(&self) -> Result<Rules, Exit> {
        let rules = Rules::new(self.id.agent.clone(), self.plan.max_steps);
        Ok(match &self.plan.output_schema {
            Some(schema) => {
                let spec = OutputSpec::new(schema.clone())
                    .map_err(|e| Exit::Failed(Failure::own(format!("the output schema: {e}"))))?;
                rules.with_output(spec, self.plan.output_retries)
            }
            None => rules,
        })
    }

    /// Executes the effects the run's machine asks for, each phase an activity, until it ends
    /// (or continues as a new execution before a step).
    async fn steps(&mut self) -> Result<Ending, Exit> {
        let rules = self.rules()?;
        self.machine.set_rules(rules);
        let mut next = self.machine.next_effect();
        loop {
            next = match next {
                Next::OpenStep(step) => {
                    if self.cancelled_now() {
                        return Err(Exit::Cancelled);
                    }
                    if self.should_continue() {
                        return Err(Exit::Continue);
                    }
                    self.open_step(step).await?
                }
                Next::RunTools { .. } => {
                    let ran = self.run_tools().await?;
                    let done = matches!(ran, ToolsRan::Done(_));
                    let from = self.machine.messages.len();
                    let next = self.machine.tools_ran(ran);
                    self.added_from(from);
                    if done && self.cancelled_now() {
                        return Err(Exit::Cancelled);
                    }
                    next
                }
                Next::CloseStep { step, answer, .. } => {
                    let end = self.end_step(step, answer).await?;
                    let from = self.machine.messages.len();
                    let next = self.machine.step_closed(StepClosed {
                        stop: end.stop,
                        veto: end.veto,
                    });
                    self.added_from(from);
                    next
                }
                // The workflow's history is its checkpoint.
                Next::Save => self.machine.saved(),
                Next::End(MachineEnding {
                    stop,
                    output,
                    stop_hooks_ran,
                }) => {
                    return match stop_hooks_ran {
                        true => Ok(Ending::Stopped { stop, output }),
                        false => Err(Exit::Stop(stop)),
                    };
                }
                Next::Fail(error) => return Err(Exit::Failed(Failure::own(error.to_string()))),
            };
        }
    }

    /// Opens step `step` in a model step activity: BeforeStep, compaction and the model turn;
    /// feeds the machine how it opened.
    async fn open_step(&mut self, step: u32) -> Result<Next, Exit> {
        let input = StepInput {
            run: self.view(),
            report_from: self.reported,
            step,
        };
        let limit = self.limits.model_step;
        let done: ModelStep = Self::settle(
            self.activity(AgentActivities::model_step, input, limit, false, None)
                .await,
        )?;
        self.state = done.state;
        // BeforeStep hooks ran before the step started, as in-process.
        self.absorb(done.opened);
        if !matches!(done.opening, StepOpened::Stop(_)) {
            self.emit(RunEvent::StepStarted {
                step,
                agent_path: self.id.agent.as_str().into(),
            });
        }
        if let Some(folded) = &done.folded {
            folded.apply(&mut self.machine.messages);
            self.ledger.rewound(folded.start);
        }
        self.absorb(done.events);
        let opening = match done.opening {
            StepOpened::Go => {
                let Some(response) = done.response else {
                    return Err(Exit::Failed(Failure::own("a model step returned no turn")));
                };
                for message in done.added {
                    self.machine.push(message);
                }
                self.machine.usage = done.usage;
                self.machine.retried_usage = done.retried_usage;
                if self.cancelled_now() {
                    return Err(Exit::Cancelled);
                }
                Opening::Turn(response)
            }
            StepOpened::Skip => Opening::Skip,
            StepOpened::Stop(stop) => Opening::Stop(stop),
        };
        let turn = matches!(opening, Opening::Turn(_));
        let before = self.machine.messages.len();
        let next = self.machine.opened(opening);
        // The activity accepted the turn too, and reported it: its worker keeps the history up
        // to it. What the machine added after it (feedback on an invalid answer) is the
        // workflow's own.
        self.reported = before + usize::from(turn);
        if turn {
            self.ledger.sync_upto(&self.machine.messages, self.reported);
        }
        self.added_from(self.reported);
        if matches!(next, Next::RunTools { .. }) {
            self.machine.batch = done.batch;
        }
        Ok(next)
    }

    /// Ends a step: AfterStep and (for a final answer) Stop hooks, in an activity when some hook
    /// wants them or has messages to see.
    async fn end_step(&mut self, step: u32, final_output: Option<Value>) -> Result<StepEnd, Exit> {
        let needed = self.wants(Events::AFTER_STEP | Events::MESSAGE_ADDED)
            || (final_output.is_some() && self.wants(Events::STOP));
        if !needed {
            self.step_finished(step);
            return Ok(StepEnd {
                stop: None,
                veto: None,
                state: self.state.clone(),
                events: Vec::new(),
                deadline: None,
            });
        }
        let input = EndStepInput {
            run: self.view(),
            report_from: self.reported,
            step,
            final_output,
        };
        let end: StepEnd = Self::settle(
            self.activity(
                AgentActivities::end_step,
                input,
                self.limits.hooks,
                true,
                None,
            )
            .await,
        )?;
        self.reported = self.machine.messages.len();
        self.state = end.state.clone();
        self.absorb(end.events.clone());
        Ok(end)
    }

    /// Runs the calls of the pending turn, each an activity (concurrently when the agent allows
    /// it and its state cannot race: a run without state), and waits for a person's decisions
    /// on calls that need them, as long as it takes, costing no worker meanwhile.
    async fn run_tools(&mut self) -> Result<ToolsRan, Exit> {
        let batch = self.machine.batch.clone();
        let count = self.machine.pending_calls().len();
        let mut settled: Vec<Option<Settled>> = vec![None; count];
        let mut decided: Vec<Option<(PendingApproval, Decision)>> = vec![None; count];
        // BeforeToolBatch hooks' plan: the blocked calls never run; the others start in its order.
        let order: Vec<usize> = match &batch {
            Some(plan) => {
                for (index, result) in &plan.blocked {
                    if let Some(slot) = settled.get_mut(*index) {
                        *slot = Some(Settled::Done(result.clone()));
                    }
                }
                plan.order.clone()
            }
            None => (0..count).collect(),
        };
        loop {
            let todo: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&i| !matches!(settled[i], Some(Settled::Done(_) | Settled::Stop { .. })))
                .collect();
            let parallel = self.plan.parallel_tool_calls && self.state.is_null() && todo.len() > 1;
            if parallel {
                let run = self.view();
                let calls = todo.iter().map(|&index| {
                    let input = ToolInput {
                        run: run.clone(),
                        index,
                        decided: decided[index].take(),
                    };
                    self.activity(
                        AgentActivities::tool_call,
                        input,
                        self.limits.tool_call,
                        false,
                        None,
                    )
                });
                let outcomes = futures::future::join_all(calls).await;
                for (&index, outcome) in todo.iter().zip(outcomes) {
                    let done: ToolDone = Self::settle(outcome)?;
                    self.absorb(done.events);
                    settled[index] = Some(done.settled);
                }
            } else {
                for &index in &todo {
                    let input = ToolInput {
                        run: self.view(),
                        index,
                        decided: decided[index].take(),
                    };
                    let limit = self.limits.tool_call;
                    let done: ToolDone = Self::settle(
                        self.activity(AgentActivities::tool_call, input, limit, false, None)
                            .await,
                    )?;
                    self.state = done.state;
                    self.absorb(done.events);
                    settled[index] = Some(match done.settled {
                        // Run now, before the next call starts, as in-process.
                        Settled::SubAgent(request) => self.sub_agent(index, request).await?,
                        other => other,
                    });
                }
            }
            self.run_sub_agents(&mut settled).await?;
            let calls = self.machine.pending_calls().to_vec();
            let stopped = settled.iter().find_map(|s| match s {
                Some(Settled::Stop { result, reason }) => {
                    Some((result.call_id.clone(), reason.clone()))
                }
                _ => None,
            });
            if let Some((call_id, reason)) = stopped {
                let results = calls
                    .iter()
                    .zip(&settled)
                    .map(|(call, s)| match s {
                        Some(Settled::Done(result) | Settled::Stop { result, .. }) => {
                            result.clone()
                        }
                        _ => {
                            ToolResult::error(&call.id, &call.name, "not run: the run was stopped")
                        }
                    })
                    .collect();
                return Ok(ToolsRan::Stopped {
                    call_id,
                    reason,
                    results,
                });
            }
            let waiting: Vec<PendingApproval> = settled
                .iter()
                .filter_map(|s| match s {
                    Some(Settled::Pending(p)) => Some(p.clone()),
                    _ => None,
                })
                .collect();
            if waiting.is_empty() {
                let results = settled
                    .into_iter()
                    .map(|s| match s {
                        Some(Settled::Done(result)) => result,
                        _ => unreachable!("every call settled with a result"),
                    })
                    .collect();
                return Ok(ToolsRan::Done(self.after_batch(results).await?));
            }
            // The calls that settled keep their results while the others wait.
            self.machine.settled = settled
                .iter()
                .filter_map(|s| match s {
                    Some(Settled::Done(result)) => Some(result.clone()),
                    _ => None,
                })
                .collect();
            if self.id.parent.is_some() {
                // A sub-agent's calls cannot wait for a person, as in-process: its run stops,
                // and its parent's model hears why.
                return Ok(ToolsRan::Paused {
                    pending: waiting,
                    settled: self.machine.settled.clone(),
                });
            }
            self.emit(RunEvent::AwaitingApproval {
                pending: waiting.clone(),
                agent_path: self.id.agent.as_str().into(),
            });
            let decisions = self.wait_for_decisions(waiting.clone()).await?;
            for pending in waiting {
                let index = calls
                    .iter()
                    .position(|c| c.id == pending.call_id)
                    .expect("a waiting call is a call of the turn");
                let decision = decisions
                    .iter()
                    .find(|d| d.call_id() == pending.call_id)
                    .cloned()
                    .expect("the update's validator checked every call is decided");
                decided[index] = Some((pending, decision));
                settled[index] = None;
            }
        }
    }

    /// AfterToolBatch hooks for the results of every call of the turn, in an activity when some
    /// hook wants them: the results as they left them.
    async fn after_batch(&mut self, results: Vec<ToolResult>) -> Result<Vec<ToolResult>, Exit> {
        if !self.wants(Events::AFTER_TOOL_BATCH) {
            return Ok(results);
        }
        let input = BatchInput {
            run: self.view(),
            results,
        };
        let limit = self.limits.hooks;
        let done: BatchDone = Self::settle(
            self.activity(AgentActivities::tool_batch_done, input, limit, true, None)
                .await,
        )?;
        self.state = done.state;
        self.absorb(done.events);
        Ok(done.results)
    }

    /// Runs the sub-agent calls among `settled` (those of a turn whose calls ran concurrently) as
    /// child workflows, concurrently too, and closes each with how its child ended.
    async fn run_sub_agents(&mut self, settled: &mut [Option<Settled>]) -> Result<(), Exit> {
        let handed: Vec<(usize, SubAgentRequest)> = settled
            .iter()
            .enumerate()
            .filter_map(|(index, s)| match s {
                Some(Settled::SubAgent(request)) => Some((index, request.clone())),
                _ => None,
            })
            .collect();
        if handed.is_empty() {
            return Ok(());
        }
        let calls = self.machine.pending_calls().to_vec();
        let parallel = self.plan.parallel_tool_calls && self.state.is_null() && handed.len() > 1;
        if parallel {
            let children = handed
                .iter()
                .map(|(index, request)| self.child_run(&calls[*index].id, request));
            let outcomes = futures::future::join_all(children).await;
            let run = self.view();
            let this = &*self;
            let closing = handed
                .into_iter()
                .zip(outcomes)
                .map(|((index, request), outcome)| {
                    let run = run.clone();
                    async move {
                        let input = SubAgentDone {
                            run,
                            index,
                            request,
                            outcome: outcome?,
                        };
                        let limit = this.limits.hooks;
                        let done = this
                            .activity(AgentActivities::sub_agent_done, input, limit, true, None)
                            .await;
                        Ok::<_, Exit>((index, Self::settle(done)?))
                    }
                });
            let closed = futures::future::join_all(closing).await;
            for closed in closed {
                let (index, done): (usize, ToolDone) = closed?;
                self.absorb(done.events);
                settled[index] = Some(done.settled);
            }
        } else {
            for (index, request) in handed {
                settled[index] = Some(self.sub_agent(index, request).await?);
            }
        }
        Ok(())
    }

    /// Runs sub-agent call `index` (handed over as `request`) as a child workflow and closes it
    /// with how the child ended.
    async fn sub_agent(&mut self, index: usize, request: SubAgentRequest) -> Result<Settled, Exit> {
        let call_id = self.machine.pending_calls()[index].id.clone();
        let outcome = self.child_run(&call_id, &request).await?;
        let input = SubAgentDone {
            run: self.view(),
            index,
            request,
            outcome,
        };
        let limit = self.limits.hooks;
        let done: ToolDone = Self::settle(
            self.activity(AgentActivities::sub_agent_done, input, limit, true, None)
                .await,
        )?;
        self.state = done.state;
        self.absorb(done.events);
        Ok(done.settled)
    }

    /// Runs the sub-agent `request` asks for, for call `call_id`, as a child workflow (its run id
    /// `<this run's id>/<call id>`), and says how it ended. Cancelling this run cancels it.
    async fn child_run(
        &self,
        call_id: &str,
        request: &SubAgentRequest,
    ) -> Result<SubAgentOutcome, Exit> {
        let run_id = format!("{}/{call_id}", self.id.run_id);
        let root_run_id = match &self.id.parent {
            Some(parent) => parent.root_run_id.clone(),
            None => self.id.run_id.clone(),
        };
        let child = RunRequest {
            agent: format!("{}/{}", self.id.agent, request.agent),
            input: request.task.clone(),
            session_id: self.id.session_id.clone(),
            user_id: self.id.user_id.clone(),
            tags: self.id.tags.clone(),
            metadata: self.id.metadata.clone(),
            limits: self.limits,
            placement: self.placement,
            continue_after: self.continue_after,
            carried: None,
            parent: Some(ParentRun {
                run_id: self.id.run_id.clone(),
                root_run_id,
            }),
            hooks: self.id.hooks.clone(),
        };
        // A stream of this run's events follows the child's own while it runs.
        self.emit(WireEvent::SubRunStarted {
            run_id: run_id.clone(),
        });
        let mut options = ChildWorkflowOptions::workflow_id(run_id.clone());
        options.cancellation_token = Some(self.interrupt.clone());
        let started = match self
            .ctx
            .start_child_workflow(AgentRun::run, child, options)
            .await
        {
            Ok(started) => started,
            Err(_) if self.cancelled_now() => return Err(Exit::Cancelled),
            Err(e) => {
                return Err(Exit::Failed(Failure::own(format!(
                    "starting sub-agent `{}` as child workflow `{run_id}` failed: {e}",
                    request.agent
                ))));
            }
        };
        let agent = &request.agent;
        let ended = match started.result().await {
            Ok(RunResult::Child {
                result,
                events,
                from,
            }) => {
                // Its events join this run's, marked as its own (a stream read them already).
                let joined = WireEvent::SubRunEvents {
                    run_id: run_id.clone(),
                    from,
                    count: events.len(),
                };
                self.ctx.state_mut(|s| {
                    s.events.push(joined);
                    s.events.extend(events);
                });
                Ok(*result)
            }
            other => other,
        };
        match ended {
            Ok(RunResult::Finished(done)) => Ok(SubAgentOutcome::of_run(
                agent,
                run_id,
                done.output,
                &done.stop,
            )),
            Ok(RunResult::Failed(error)) => Ok(SubAgentOutcome::failed(agent, &error)),
            Ok(RunResult::FailedWithParent(error)) => Err(Exit::Failed(Failure {
                fails_parent: true,
                ..Failure::own(error)
            })),
            Ok(RunResult::Child { .. }) => unreachable!("a child's result is unwrapped once"),
            Err(_) if self.cancelled_now() => Err(Exit::Cancelled),
            Err(e) => Ok(SubAgentOutcome::failed(agent, &e)),
        }
    }

    /// Publishes the waiting calls and waits for an update that decides them.
    async fn wait_for_decisions(
        &mut self,
        waiting: Vec<PendingApproval>,
    ) -> Result<Vec<Decision>, Exit> {
        self.ctx.state_mut(|s| {
            s.awaiting = waiting;
            s.decisions = None;
            // A run that waits for a person is paused, as in-process, where the paused run's
            // call returns: a deadline hooks set no longer applies (they may set another).
            s.deadline = None;
        });
        if self
            .ctx
            .wait_condition(|s| s.decisions.is_some())
            .await
            .is_err()
        {
            return Err(Exit::Cancelled);
        }
        Ok(self.ctx.state_mut(|s| {
            s.awaiting.clear();
            s.decisions.take().unwrap_or_default()
        }))
    }

    /// The run's last activity, when some hook wants it: Stop hooks for `stop_event`, RunError
    /// (which may recover a failure), RunEnd. The outcome is decided before it runs.
    async fn finish(&mut self, stop_event: Option<StopReason>, ending: Ending) -> RunResult {
        self.finish_with(stop_event, ending, None).await
    }

    async fn finish_with(
        &mut self,
        stop_event: Option<StopReason>,
        ending: Ending,
        token: Option<WorkflowCancellationToken>,
    ) -> RunResult {
        let mut wanted = Events::RUN_END | Events::MESSAGE_ADDED;
        if stop_event.is_some() {
            wanted |= Events::STOP;
        }
        if matches!(ending, Ending::Failed(_)) {
            wanted |= Events::RUN_ERROR;
        }
        let finish = if self.wants(wanted) {
            let input = FinishInput {
                run: self.view(),
                report_from: self.reported,
                stop_event,
                ending,
            };
            let outcome = self
                .activity(
                    AgentActivities::finish,
                    input,
                    self.limits.hooks,
                    true,
                    token,
                )
                .await;
            match Self::settle(outcome) {
                Ok(finish) => finish,
                Err(Exit::Failed(failure)) => {
                    self.fails_parent |= failure.fails_parent;
                    return self.failed(failure.error);
                }
                Err(Exit::Cancelled) => Finish {
                    stop: StopReason::Cancelled,
                    output: None,
                    state: self.state.clone(),
                    events: Vec::new(),
                },
                Err(Exit::Stop(_) | Exit::Continue | Exit::Deadline(_)) => {
                    unreachable!("settle never stops")
                }
            }
        } else {
            match ending {
                Ending::Stopped { stop, output } => Finish {
                    stop,
                    output,
                    state: self.state.clone(),
                    events: Vec::new(),
                },
                Ending::Failed(error) => return self.failed(error),
            }
        };
        self.absorb(finish.events);
        self.emit(RunEvent::RunFinished {
            run_id: self.id.run_id.clone(),
            stop: finish.stop.clone(),
            agent_path: self.id.agent.as_str().into(),
        });
        RunResult::Finished(Box::new(FinishedRun {
            output: finish.output,
            text: self.machine.last_text(),
            state: finish.state,
            messages: self.machine.messages.clone(),
            usage: self.machine.usage,
            retried_usage: self.machine.retried_usage,
            steps: self.machine.step,
            model_calls: self.machine.model_calls,
            stop: finish.stop,
        }))
    }

    /// Ends the run failed with `error`, recorded.
    fn failed(&self, error: String) -> RunResult {
        self.emit(RunEvent::RunFailed {
            run_id: self.id.run_id.clone(),
            error: error.clone(),
            agent_path: self.id.agent.as_str().into(),
        });
        match self.fails_parent {
            true => RunResult::FailedWithParent(error),
            false => RunResult::Failed(error),
        }
    }

    /// Ends a cancelled run as the in-process runtime does: the step under way does not count,
    /// the calls of a turn under way get no results, and the Stop and RunEnd hooks see
    /// `cancelled` (in an activity the cancellation does not reach).
    async fn cancelled(&mut self) -> RunResult {
        // The step under way, if it did not close, does not count.
        let stop = self.machine.interrupt(Interruption::Cancelled).stop;
        let ending = Ending::Stopped {
            stop: stop.clone(),
            output: None,
        };
        self.finish_with(Some(stop), ending, Some(WorkflowCancellationToken::new()))
            .await
    }
}

/// Resolves with the stop reason once the run's deadline (set by a hook with
/// `RunContext::stop_at`, e.g. the guards' wall time) passes, in workflow time: a durable timer,
/// started again when a hook sets an earlier deadline.
async fn deadline_passed(ctx: WorkflowContext<AgentRun>) -> StopReason {
    loop {
        let Some(deadline) = ctx.state(|s| s.deadline.clone()) else {
            if ctx.wait_condition(|s| s.deadline.is_some()).await.is_err() {
                // The workflow was cancelled: the run ends that way, not at a deadline.
                return std::future::pending().await;
            }
            continue;
        };
        let now = ctx.workflow_time().unwrap_or(std::time::UNIX_EPOCH);
        let remaining = match deadline.at().duration_since(now) {
            Ok(remaining) if !remaining.is_zero() => remaining,
            _ => return deadline.stop,
        };
        // A detached token: cancelling the workflow must not fire the deadline.
        let token = WorkflowCancellationToken::new();
        let timer = ctx.timer(
            TimerOptions::builder(remaining)
                .cancellation_token(token.clone())
                .build(),
        );
        let at_ms = deadline.at_ms;
        let changed =
            ctx.wait_condition(move |s| s.deadline.as_ref().map(|d| d.at_ms) != Some(at_ms));
        match futures::future::select(std::pin::pin!(timer), std::pin::pin!(changed)).await {
            Either::Left(_) => return deadline.stop,
            Either::Right((Ok(()), _)) => token.cancel(),
            Either::Right((Err(_), timer)) => {
                timer.await;
                return deadline.stop;
            }
        }
    }
}
