//! Sub-agent calls as child workflows.

use super::{AgentRun, Exit, Loop};
use crate::activities::AgentActivities;
use crate::events::WireEvent;
use crate::wire::{Failure, ParentRun, RunResult, SubAgentDone, WorkflowInput};
use agentry_runtime::effects::CallOutcome;
use agentry_runtime::effects::{SubAgentOutcome, SubAgentRequest};
use temporalio_sdk::ChildWorkflowOptions;

impl Loop {
    /// Runs the sub-agent calls among `settled` (those of a turn whose calls ran concurrently) as
    /// child workflows, concurrently too, and closes each with how its child ended.
    pub(super) async fn run_sub_agents(
        &mut self,
        settled: &mut [Option<CallOutcome>],
    ) -> Result<(), Exit> {
        let handed: Vec<(usize, SubAgentRequest)> = settled
            .iter()
            .enumerate()
            .filter_map(|(index, s)| match s {
                Some(CallOutcome::SubAgent(request)) => Some((index, request.clone())),
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
                let (index, done) = closed?;
                self.absorb(done.events);
                settled[index] = Some(done.value);
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
    pub(super) async fn sub_agent(
        &mut self,
        index: usize,
        request: SubAgentRequest,
    ) -> Result<CallOutcome, Exit> {
        let call_id = self.machine.pending_calls()[index].id.clone();
        let outcome = self.child_run(&call_id, &request).await?;
        let input = SubAgentDone {
            run: self.view(),
            index,
            request,
            outcome,
        };
        let limit = self.limits.hooks;
        let done = Self::settle(
            self.activity(AgentActivities::sub_agent_done, input, limit, true, None)
                .await,
        )?;
        Ok(self.accept(done))
    }

    /// Runs the sub-agent `request` asks for, for call `call_id`, as a child workflow (its run id
    /// `<this run's id>/<call id>`), and says how it ended. Cancelling this run cancels it.
    pub(super) async fn child_run(
        &self,
        call_id: &str,
        request: &SubAgentRequest,
    ) -> Result<SubAgentOutcome, Exit> {
        let run_id = format!("{}/{call_id}", self.id.run_id);
        let root_run_id = match &self.id.parent {
            Some(parent) => parent.root_run_id.clone(),
            None => self.id.run_id.clone(),
        };
        let child = WorkflowInput {
            agent: format!("{}/{}", self.id.agent, request.agent),
            input: request.task.clone().into(),
            session_id: self.id.session_id.clone(),
            user_id: self.id.user_id.clone(),
            tags: self.id.tags.clone(),
            metadata: self.id.metadata.clone(),
            limits: self.limits,
            placement: self.placement,
            continue_after: self.continue_after,
            carried: None,
            forked: None,
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
}
