//! The calls of one model turn: BeforeToolBatch's plan, the calls run one after another or
//! concurrently, AfterToolBatch, and what a turn whose calls wait for a person or were stopped
//! leaves.

use super::{Settled, ToolCalls, ToolPhase};
use crate::driver::Driver;
use crate::effects::BatchPlan;
use agentry_core::hooks::{AfterToolBatch, BeforeToolBatch, Events};
use agentry_core::machine::ToolsRan;
use agentry_core::{Error, Message, ToolResult};
use std::sync::Arc;

impl Driver {
    /// Runs the calls of the pending turn: their results in call order, unless some wait for
    /// approval or a person stopped the run. Calls that settled before (while others waited, or
    /// before the run stopped) keep their results and do not run again.
    pub(crate) async fn run_tools(&mut self) -> Result<ToolPhase, Error> {
        let Some(turn) = self.machine.pending.clone() else {
            return Err(Error::other("the run has no pending tool calls to run"));
        };
        let count = turn.tool_calls().len();
        // What BeforeToolBatch hooks decided: the calls they blocked, the order the calls start
        // in. They run once per turn: a turn resumed (after an approval, or in another process)
        // follows what they decided before it paused, which its checkpoint keeps.
        let batch = match self.machine.batch.clone() {
            Some(plan) => Some(plan),
            None if self.scope.wants(Events::BEFORE_TOOL_BATCH) => {
                // Boxed, like the other rare paths: the common step's future stays small.
                let batch = Box::pin(self.scope.hook(BeforeToolBatch::new(turn.clone()))).await?;
                let plan = BatchPlan::of(&batch);
                self.machine.batch = Some(plan.clone());
                Some(plan)
            }
            None => None,
        };
        let (done, held) = match &batch {
            None => self.tool_calls().settle_calls(&turn, count).await?,
            Some(batch) => Box::pin(self.tool_calls().settle_batch(&turn, batch)).await?,
        };
        if !self.decisions.is_empty() {
            self.decisions.clear();
        }
        if held.is_empty() {
            let done = if self.scope.wants(Events::AFTER_TOOL_BATCH) {
                Box::pin(self.scope.hook(AfterToolBatch::new(done)))
                    .await?
                    .into_results()
            } else {
                done
            };
            return Ok(ToolPhase {
                ran: ToolsRan::Done(done),
                stopped_by: None,
            });
        }
        Ok(held_calls(&turn, done, held))
    }
}

impl ToolCalls<'_> {
    /// Runs the calls of `turn` in the model's order: the results of those that settled with
    /// one, in call order, and the others (waiting, or rejected with a stop) by index. The second
    /// stays empty, unallocated, in most turns.
    pub(super) async fn settle_calls(
        &self,
        turn: &Arc<Message>,
        count: usize,
    ) -> Result<(Vec<ToolResult>, Vec<(usize, Settled)>), Error> {
        let mut done = Vec::with_capacity(count);
        let mut held = Vec::new();
        let mut sort = |index: usize, settled: Settled| match settled {
            Settled::Done(result) => done.push(result),
            other => held.push((index, other)),
        };
        if count == 1 || !self.def.parallel_tool_calls {
            for index in 0..count {
                sort(index, self.tool_call(turn, index).await?);
            }
        } else {
            let all =
                futures::future::try_join_all((0..count).map(|index| self.tool_call(turn, index)))
                    .await?;
            for (index, settled) in all.into_iter().enumerate() {
                sort(index, settled);
            }
        }
        Ok((done, held))
    }

    /// Runs the calls of `turn` as BeforeToolBatch hooks decided (`batch`): the blocked ones get
    /// their reason as an error result and never run, the others start in the hooks' order.
    /// Results come back as [`settle_calls`](Self::settle_calls) gives them, in call order.
    pub(super) async fn settle_batch(
        &self,
        turn: &Arc<Message>,
        batch: &BatchPlan,
    ) -> Result<(Vec<ToolResult>, Vec<(usize, Settled)>), Error> {
        let order = &batch.order;
        let blocked = |index: usize| batch.blocked(index).cloned();
        let mut settled: Vec<(usize, Settled)> = Vec::with_capacity(order.len());
        if order.len() == 1 || !self.def.parallel_tool_calls {
            for &index in order {
                let outcome = match blocked(index) {
                    Some(result) => Settled::Done(result),
                    None => self.tool_call(turn, index).await?,
                };
                settled.push((index, outcome));
            }
        } else {
            let runs = order.iter().map(|&index| {
                let blocked = blocked(index);
                async move {
                    match blocked {
                        Some(result) => Ok(Settled::Done(result)),
                        None => self.tool_call(turn, index).await,
                    }
                }
            });
            let all = futures::future::try_join_all(runs).await?;
            settled.extend(order.iter().copied().zip(all));
        }
        // Started in the hooks' order; reported in the model's.
        settled.sort_by_key(|(index, _)| *index);
        let mut done = Vec::with_capacity(settled.len());
        let mut held = Vec::new();
        for (index, outcome) in settled {
            match outcome {
                Settled::Done(result) => done.push(result),
                other => held.push((index, other)),
            }
        }
        Ok((done, held))
    }
}

/// Ends a tool phase in which some calls did not settle with a result: the run pauses until
/// they are decided, or (when one was rejected with a stop) every call gets a result and the
/// run stops.
fn held_calls(
    turn: &Arc<Message>,
    done: Vec<ToolResult>,
    held: Vec<(usize, Settled)>,
) -> ToolPhase {
    if !held.iter().any(|(_, s)| matches!(s, Settled::Stop { .. })) {
        let pending = held
            .into_iter()
            .filter_map(|(_, s)| match s {
                Settled::Pending(p) => Some(p),
                _ => None,
            })
            .collect();
        return ToolPhase {
            ran: ToolsRan::Paused {
                pending,
                settled: done,
            },
            stopped_by: None,
        };
    }
    let mut outcome = None;
    let mut done = done.into_iter();
    let mut held = held.into_iter().peekable();
    let mut results = Vec::with_capacity(turn.tool_calls().len());
    for (index, call) in turn.tool_calls().iter().enumerate() {
        let Some((_, settled)) = held.next_if(|(i, _)| *i == index) else {
            results.extend(done.next());
            continue;
        };
        match settled {
            Settled::Stop { result, reason, by } => {
                outcome.get_or_insert((result.call_id.clone(), reason, by));
                results.push(result);
            }
            Settled::Pending(_) | Settled::Done(_) | Settled::SubAgent(_) => results.push(
                ToolResult::error(&call.id, &call.name, "not run: the run was stopped"),
            ),
        }
    }
    let (call_id, reason, by) = outcome.expect("a held call was rejected with a stop");
    ToolPhase {
        ran: ToolsRan::Stopped {
            call_id,
            reason,
            results,
        },
        stopped_by: Some(by),
    }
}
