//! The tool phase in the workflow: each call an activity (concurrently when the run allows
//! it), calls that wait for a person's decision, AfterToolBatch.

use super::{Exit, Loop};
use crate::activities::AgentActivities;
use crate::wire::{BatchInput, PENDING_MEMO, ToolInput};
use agentry_core::hooks::Events;
use agentry_core::machine::ToolsRan;
use agentry_core::{Decision, PendingApproval, RunEvent, ToolResult};
use agentry_runtime::effects::CallOutcome;
use temporalio_sdk::MemoValue;

impl Loop {
    /// Runs the calls of the pending turn, each an activity (concurrently when the agent allows
    /// it and its state cannot race: a run without state), and waits for a person's decisions
    /// on calls that need them, as long as it takes, costing no worker meanwhile.
    pub(super) async fn run_tools(&mut self) -> Result<ToolsRan, Exit> {
        let batch = self.machine.batch.clone();
        let count = self.machine.pending_calls().len();
        let mut settled: Vec<Option<CallOutcome>> = vec![None; count];
        let mut decided: Vec<Option<(PendingApproval, Decision)>> = vec![None; count];
        // BeforeToolBatch hooks' plan: the blocked calls never run; the others start in its order.
        let order: Vec<usize> = match &batch {
            Some(plan) => {
                for (index, result) in &plan.blocked {
                    if let Some(slot) = settled.get_mut(*index) {
                        *slot = Some(CallOutcome::Done(result.clone()));
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
                .filter(|&i| {
                    !matches!(
                        settled[i],
                        Some(CallOutcome::Done(_) | CallOutcome::Stop { .. })
                    )
                })
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
                    let done = Self::settle(outcome)?;
                    self.absorb(done.events);
                    settled[index] = Some(done.value);
                }
            } else {
                for &index in &todo {
                    let input = ToolInput {
                        run: self.view(),
                        index,
                        decided: decided[index].take(),
                    };
                    let limit = self.limits.tool_call;
                    let done = Self::settle(
                        self.activity(AgentActivities::tool_call, input, limit, false, None)
                            .await,
                    )?;
                    settled[index] = Some(match self.accept(done) {
                        // Run now, before the next call starts, as in-process.
                        CallOutcome::SubAgent(request) => self.sub_agent(index, request).await?,
                        other => other,
                    });
                }
            }
            self.run_sub_agents(&mut settled).await?;
            let calls = self.machine.pending_calls().to_vec();
            let stopped = settled.iter().find_map(|s| match s {
                Some(CallOutcome::Stop { result, reason }) => {
                    Some((result.call_id.clone(), reason.clone()))
                }
                _ => None,
            });
            if let Some((call_id, reason)) = stopped {
                let results = calls
                    .iter()
                    .zip(&settled)
                    .map(|(call, s)| match s {
                        Some(CallOutcome::Done(result) | CallOutcome::Stop { result, .. }) => {
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
                    Some(CallOutcome::Pending(p)) => Some(p.clone()),
                    _ => None,
                })
                .collect();
            if waiting.is_empty() {
                let results = settled
                    .into_iter()
                    .map(|s| match s {
                        Some(CallOutcome::Done(result)) => result,
                        _ => unreachable!("every call settled with a result"),
                    })
                    .collect();
                return Ok(ToolsRan::Done(self.after_batch(results).await?));
            }
            // The calls that settled keep their results while the others wait.
            self.machine.settled = settled
                .iter()
                .filter_map(|s| match s {
                    Some(CallOutcome::Done(result)) => Some(result.clone()),
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
                run_id: None,
            });
            self.pause(&waiting).await?;
            let decisions = self.wait_for_decisions(waiting.clone()).await?;
            self.unpause();
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
    pub(super) async fn after_batch(
        &mut self,
        results: Vec<ToolResult>,
    ) -> Result<Vec<ToolResult>, Exit> {
        if !self.wants(Events::AFTER_TOOL_BATCH) {
            return Ok(results);
        }
        let input = BatchInput {
            run: self.view(),
            results,
        };
        let limit = self.limits.hooks;
        let done = Self::settle(
            self.activity(AgentActivities::tool_batch_done, input, limit, true, None)
                .await,
        )?;
        Ok(self.accept(done))
    }

    /// Publishes the waiting calls and waits for an update that decides them.
    pub(super) async fn wait_for_decisions(
        &mut self,
        waiting: Vec<PendingApproval>,
    ) -> Result<Vec<Decision>, Exit> {
        // Kept in the workflow's memo too, which the server answers for with no worker running.
        let _ = self
            .ctx
            .upsert_memo([(PENDING_MEMO, Some(MemoValue::new(waiting.clone())))]);
        self.ctx.state_mut(|s| {
            s.awaiting = waiting;
            s.decisions = None;
            // A run that waits for a person is paused, as in-process, where the paused run's
            // call returns: a deadline hooks set no longer applies (they may set another).
            s.deadline = None;
        });
        let waited = self.ctx.wait_condition(|s| s.decisions.is_some()).await;
        let _ = self.ctx.upsert_memo([(
            PENDING_MEMO,
            Some(MemoValue::new(Vec::<PendingApproval>::new())),
        )]);
        if waited.is_err() {
            return Err(Exit::Cancelled);
        }
        Ok(self.ctx.state_mut(|s| {
            s.awaiting.clear();
            s.decisions.take().unwrap_or_default()
        }))
    }
}
