//! How a run ends in the workflow: the finish activity (Stop, RunFailed, RunEnd), a failure, a
//! cancellation, a deadline.

use super::{Exit, Loop, RunOutput};
use crate::activities::AgentActivities;
use crate::wire::{Done, Ending, Finish, FinishInput, RunResult};
use agentry_core::hooks::Events;
use agentry_core::machine::Interruption;
use agentry_core::{PendingApproval, RunEvent, StopReason};
use temporalio_sdk::WorkflowCancellationToken;

impl Loop {
    /// Ends the run as the in-process runtime does when a deadline passes mid-run: the calls of
    /// the turn under way that have no result get an error result saying why, so the history
    /// stays well-formed; the step under way counts.
    pub(super) fn stopped_at_deadline(&mut self, stop: StopReason) {
        let from = self.machine.messages.len();
        let _ = self.machine.interrupt(Interruption::Deadline(stop));
        self.added_from(from);
    }

    /// The run's last activity, when some hook wants it: Stop hooks for `stop_event`, RunFailed
    /// (which may recover a failure), RunEnd. The outcome is decided before it runs.
    pub(super) async fn finish(
        &mut self,
        stop_event: Option<StopReason>,
        ending: Ending,
    ) -> RunResult {
        self.finish_with(stop_event, ending, None).await
    }

    pub(super) async fn finish_with(
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
            wanted |= Events::RUN_FAILED;
        }
        let finish = if self.wants(wanted) {
            let report_from = self.reported;
            let outcome = self
                .finish_activity(report_from, stop_event, ending, false, token)
                .await;
            match outcome {
                Ok(finish) => finish,
                Err(Exit::Failed(failure)) => {
                    self.fails_parent |= failure.fails_parent;
                    return self.failed(failure.error);
                }
                Err(Exit::Cancelled) => Done::alone(
                    Finish {
                        stop: StopReason::Cancelled,
                        output: None,
                    },
                    self.state.clone(),
                ),
                Err(Exit::Stop(_) | Exit::Continue | Exit::Deadline(_)) => {
                    unreachable!("settle never stops")
                }
            }
        } else {
            match ending {
                Ending::Stopped { stop, output } => {
                    Done::alone(Finish { stop, output }, self.state.clone())
                }
                Ending::Failed(error) => return self.failed(error),
            }
        };
        let finish = self.accept(finish);
        self.keep_stopped(Some(finish.stop.clone()), finish.output.clone(), None);
        self.emit(RunEvent::RunFinished {
            run_id: self.id.run_id.clone(),
            stop: finish.stop.clone(),
            agent_path: self.id.agent.as_str().into(),
        });
        RunResult::Finished(Box::new(self.output(finish.stop, finish.output)))
    }

    /// The `agentry.finish` activity: MessageAdded from `report_from`, Stop hooks for
    /// `stop_event`, RunFailed, RunEnd; `paused` when the run goes on afterwards.
    async fn finish_activity(
        &mut self,
        report_from: usize,
        stop_event: Option<StopReason>,
        ending: Ending,
        paused: bool,
        token: Option<WorkflowCancellationToken>,
    ) -> Result<Done<Finish>, Exit> {
        let input = FinishInput {
            run: self.view(),
            report_from,
            stop_event,
            ending,
            paused,
        };
        let limit = self.limits.hooks;
        let outcome = self
            .activity(AgentActivities::finish, input, limit, true, token)
            .await;
        Self::settle(outcome)
    }

    /// What the run's caller gets when it stops with `stop`.
    fn output(&self, stop: StopReason, output: Option<serde_json::Value>) -> RunOutput {
        RunOutput {
            run_id: self.id.run_id.clone(),
            session_id: self.id.session_id.clone(),
            output,
            text: self.machine.last_text(),
            state: self.state.clone(),
            messages: self.machine.messages.clone(),
            usage: self.machine.usage,
            retried_usage: self.machine.retried_usage,
            steps: self.machine.step,
            model_calls: self.machine.model_calls,
            stop,
        }
    }

    /// Keeps the run as it stands, stopped with `stop`, `output` or `error`, for
    /// [`AgentRun::stopped`](super::AgentRun::stopped) (its history is shared, not copied).
    fn keep_stopped(
        &self,
        stop: Option<StopReason>,
        output: Option<serde_json::Value>,
        error: Option<String>,
    ) {
        let mut snapshot =
            self.id
                .snapshot(&self.machine, &self.state, self.machine.messages.clone());
        snapshot.stop = stop;
        snapshot.output = output;
        snapshot.error = error;
        self.ctx.state_mut(|s| s.stopped = Some(Box::new(snapshot)));
    }

    /// The run pauses for a person, as in-process, where the paused run's call returns: Stop
    /// and RunEnd hooks see `AwaitingApproval` (in the finish activity, when some hook wants
    /// them), the stream gets `RunFinished` with that reason, and what the run's caller gets is
    /// kept for [`AgentRun::paused`](super::AgentRun::paused). The run goes on when decided.
    pub(super) async fn pause(&mut self, waiting: &[PendingApproval]) -> Result<(), Exit> {
        let stop = StopReason::AwaitingApproval {
            pending: waiting.to_vec(),
        };
        if self.wants(Events::STOP | Events::RUN_END) {
            let ending = Ending::Stopped {
                stop: stop.clone(),
                output: None,
            };
            let report_from = self.machine.messages.len();
            let done = self
                .finish_activity(report_from, Some(stop.clone()), ending, true, None)
                .await?;
            self.accept(done);
        }
        self.keep_stopped(Some(stop.clone()), None, None);
        let paused = self.output(stop.clone(), None);
        self.ctx.state_mut(|s| s.paused = Some(Box::new(paused)));
        self.emit(RunEvent::RunFinished {
            run_id: self.id.run_id.clone(),
            stop,
            agent_path: self.id.agent.as_str().into(),
        });
        Ok(())
    }

    /// The run goes on after a person decided, as an in-process resume does.
    pub(super) fn unpause(&mut self) {
        self.ctx.state_mut(|s| {
            s.paused = None;
            s.stopped = None;
        });
        self.emit(RunEvent::RunStarted {
            run_id: self.id.run_id.clone(),
            agent_path: self.id.agent.as_str().into(),
        });
    }

    /// Ends the run failed with `error`, recorded (masked by the worker's redactor, as the
    /// in-process store keeps a failed run's error).
    pub(super) fn failed(&self, error: String) -> RunResult {
        let error = self.redact(error);
        self.keep_stopped(None, None, Some(error.clone()));
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
    pub(super) async fn cancelled(&mut self) -> RunResult {
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
