//! The workflow: executes the effects the step machine ([`RunMachine`]) asks for, as the
//! in-process runtime does, each phase an activity ([`crate::activities`]). The machine decides
//! the run's course with nothing but what the activities returned (recorded in the run's
//! history), so a replay on any worker decides the same.

use crate::events::WireEvent;
use crate::ledger::Ledger;
use crate::wire::{
    Carried, Deadline, DecideRequest, Done, Effect, Ending, EventPage, Failure, Identity, Limits,
    Placement, RunPlan, RunResult, RunView, WorkflowInput, carried_deadline,
};
use agentry_core::hooks::Events;
use agentry_core::{
    Decision, History, Message, PendingApproval, Redact, RunEvent, RunMachine, RunSnapshot,
    StopReason, match_decisions,
};

/// A run's output as the workflow gives it: state and output as JSON.
pub(crate) type RunOutput = agentry_core::RunOutput<Value, Value>;
use futures::future::Either;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use temporalio_common::ActivityDefinition;
use temporalio_common::data_converters::TemporalDeserializable;
use temporalio_common::error::ActivityExecutionError;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ContinueAsNewOptions, LocalActivityOptions, SyncWorkflowContext, TimerOptions,
    WorkflowCancellationToken, WorkflowContext, WorkflowContextView, WorkflowResult,
};

mod course;
mod ending;
mod sub_agents;
mod tools;

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
    /// What the run's caller gets while it waits for a person.
    paused: Option<Box<RunOutput>>,
    /// The run as it stood when it last stopped (ended, failed, or paused for a person): what
    /// a fork of it starts from ([`AgentRun::stopped`]).
    stopped: Option<Box<RunSnapshot>>,
    /// The worker runtime's redactor, which masks the events the workflow records itself (the
    /// activities' come masked), as the in-process runtime masks every event it sends. Given
    /// by the worker that hosts the workflow; it changes what the run reports, never a command.
    redactor: Option<Arc<dyn Redact>>,
}

impl AgentRun {
    /// The factory a worker registers the workflow with: each run gets the worker's redactor.
    pub(crate) fn factory(redactor: Option<Arc<dyn Redact>>) -> impl Fn() -> AgentRun {
        move || AgentRun {
            redactor: redactor.clone(),
            ..AgentRun::default()
        }
    }
}

#[workflow_methods]
impl AgentRun {
    /// Runs the agent the request names to the end.
    #[run(name = "agentry.run")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        request: WorkflowInput,
    ) -> WorkflowResult<RunResult> {
        let run_id = ctx.workflow_id().to_string();
        let mut request = request;
        let carried = request.carried.take();
        let mut run = Loop {
            ctx: ctx.clone(),
            id: Identity::of(&run_id, &request),
            sub_run: request.parent.is_some().then(|| Arc::from(run_id.as_str())),
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
                let next = WorkflowInput {
                    input: agentry_core::Content::new(),
                    carried: Some(Box::new(run.carry())),
                    forked: None,
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

    /// What the run's caller gets while it waits for a person (stop `AwaitingApproval`), as
    /// in-process `run` returns it; `None` while it does not wait.
    #[query]
    pub(crate) fn paused(&self, _ctx: &WorkflowContextView) -> Option<RunOutput> {
        self.paused.as_deref().cloned()
    }

    /// The run as it stood when it last stopped (ended, failed, or paused for a person), its
    /// whole history included; `None` while it has not stopped yet. What a fork reads.
    #[query]
    pub(crate) fn stopped(&self, _ctx: &WorkflowContextView) -> Option<RunSnapshot> {
        self.stopped.as_deref().cloned()
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
    fn validate_decide(
        &self,
        _ctx: &WorkflowContextView,
        request: &DecideRequest,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        check_decisions(&self.awaiting, &request.decisions).map_err(Into::into)
    }

    /// Decides the waiting calls; the run goes on with them. Decisions taken up after their
    /// client stopped waiting (no worker ran then) are refused: they never apply late.
    #[update]
    pub(crate) fn decide(
        &mut self,
        ctx: &mut SyncWorkflowContext<Self>,
        request: DecideRequest,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let now = ctx
            .workflow_time()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64);
        if let (Some(limit), Some(now)) = (request.not_after_ms, now)
            && now > limit
        {
            return Err(format!(
                "the decisions reached a worker {} ms after their client stopped waiting for them, so they were not applied; decide again",
                now - limit
            )
            .into());
        }
        self.decisions = Some(request.decisions);
        Ok(())
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
    /// The run's id as its events name it, for a sub-agent's run.
    sub_run: Option<Arc<str>>,
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
    async fn activity<AD, T>(
        &self,
        activity: AD,
        input: AD::Input,
        limit: Duration,
        hooks_only: bool,
        token: Option<WorkflowCancellationToken>,
    ) -> Result<Effect<T>, ActivityExecutionError>
    where
        AD: ActivityDefinition<Output = Effect<T>>,
        Effect<T>: TemporalDeserializable,
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
            self.note_deadline(carried_deadline(done).cloned());
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

    /// Records a run event of the run's course, masked by the worker's redactor.
    fn emit(&self, event: impl Into<WireEvent>) {
        let event = match event.into() {
            // A sub-agent's run names itself on each of its events, as in process.
            WireEvent::Run(event) => match &self.sub_run {
                Some(run) => WireEvent::Run(event.with_run_id(run)),
                None => WireEvent::Run(event),
            },
            event => event,
        };
        self.ctx.state_mut(|s| {
            let event = match (event, &s.redactor) {
                (WireEvent::Run(event), Some(r)) => WireEvent::Run(event.redacted(&**r)),
                (event, _) => event,
            };
            s.events.push(event)
        });
    }

    /// `text` masked by the worker's redactor.
    fn redact(&self, mut text: String) -> String {
        self.ctx.state(|s| {
            if let Some(r) = &s.redactor {
                agentry_core::redact::redact_string(&**r, &mut text);
            }
        });
        text
    }

    /// Records the events an activity's effects sent.
    fn absorb(&self, events: Vec<WireEvent>) {
        if !events.is_empty() {
            self.ctx.state_mut(|s| s.events.extend(events));
        }
    }

    /// Records `Message` events for the messages of the history from index `from` on: those
    /// the workflow added itself (tool results, feedback).
    fn added_from(&mut self, from: usize) {
        let history = &self.machine.messages;
        let agent_path: Arc<str> = self.id.agent.as_str().into();
        for message in (from..history.len()).filter_map(|i| history.get_shared(i)) {
            self.emit(RunEvent::Message {
                message: message.clone(),
                agent_path: agent_path.clone(),
                run_id: None,
            });
        }
    }

    /// Records the step's end when no activity did (one that runs AfterStep hooks does).
    fn step_finished(&self, step: u32) {
        self.emit(RunEvent::StepFinished {
            step,
            usage: self.machine.step_usage(),
            agent_path: self.id.agent.as_str().into(),
            run_id: None,
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

    /// Takes up what an effect carried back (the run's state, its events) and gives what it gave.
    fn accept<T>(&mut self, done: Done<T>) -> T {
        self.state = done.state;
        self.absorb(done.events);
        done.value
    }

    /// Unwraps an activity's outcome: the effect's, or why the loop ends.
    fn settle<T>(outcome: Result<Effect<T>, ActivityExecutionError>) -> Result<Done<T>, Exit> {
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
