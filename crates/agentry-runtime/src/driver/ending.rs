//! How a run ends: RunFailed recovery, a cancellation, a deadline, the calls an interruption
//! cut off, the outcome checkpointed before RunEnd hooks.

use super::{Driver, Ending, Finished};
use crate::open_calls::OpenCall;
use agentry_core::hooks::{
    AfterModel, Events, HookFailed, RunEnd, RunFailed, SubAgentFailed, ToolFailed,
};
use agentry_core::machine::Interruption;
use agentry_core::{Error, FinishReason, ModelResponse, RunEvent, StopReason};
use serde_json::Value;
use std::sync::Arc;

impl Driver {
    pub(super) async fn recover(&mut self, error: Error) -> Result<Ending, Error> {
        if !self.scope.wants(Events::RUN_FAILED) {
            return Err(error);
        }
        let error = Arc::new(error);
        let (ev, by) = self
            .scope
            .hook_decided(RunFailed::new(error.clone()))
            .await?;
        if let Some(output) = ev.recovery() {
            let stop = StopReason::Recovered {
                hook: by.as_deref().unwrap_or_default().to_string(),
                error: error.to_string(),
            };
            return Ok((Some(output.clone()), stop));
        }
        drop(ev);
        Err(Arc::try_unwrap(error).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// Ends a cancelled run: the step under way does not count, and the store keeps the last
    /// checkpoint (the state at the end of the last completed step), marked cancelled, so the run
    /// can be resumed from there.
    pub(super) async fn cancelled(&mut self) -> Result<Ending, Error> {
        Box::pin(self.close_open_calls("the run was cancelled")).await?;
        // The step under way, if it did not close, does not count.
        let _ = self.machine.interrupt(Interruption::Cancelled);
        if self.rt.store.is_some() {
            let mut snapshot = match self.last_checkpoint.take() {
                Some(s) => s,
                None => self.snapshot(None, None)?,
            };
            snapshot.stop = Some(StopReason::Cancelled);
            let saved = self.save(&snapshot, true).await;
            self.last_checkpoint = Some(snapshot);
            saved?;
        }
        self.stop_event(StopReason::Cancelled, None).await?;
        Ok((None, StopReason::Cancelled))
    }

    /// True when the run's handle asked to leave it rather than cancel it.
    pub(super) fn is_leaving(&self) -> bool {
        self.durable.is_some()
            && self
                .leaving
                .as_ref()
                .is_some_and(|l| l.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Leaves an interrupted run unfinished: the step under way does not count, and the store
    /// keeps the last checkpoint as it was (`running`), with the events since, its lease
    /// released, so any process resumes it at once; calls in flight are issued again then,
    /// with the same ids.
    pub(super) async fn left(&mut self) -> Error {
        let run_id = self.scope.context().run_id().to_string();
        let snapshot = match self.last_checkpoint.take() {
            Some(s) => Ok(s),
            None => self.snapshot(None, None),
        };
        match snapshot {
            Ok(snapshot) => {
                if let Err(store_error) = self.save(&snapshot, true).await {
                    tracing::warn!(%store_error, run_id, "the run was left without a last save; its lease lapses instead");
                }
                self.last_checkpoint = Some(snapshot);
            }
            Err(error) => tracing::warn!(%error, run_id, "the run was left without a last save"),
        }
        self.release();
        Error::Left { run_id }
    }

    /// Ends a run whose deadline ([`RunContext::stop_at`], e.g. the guards' wall time) passed
    /// while it was under way: what was in flight was dropped; the calls of the turn under way
    /// get an error result saying why, so the history stays well-formed (a session can go on
    /// from it), and the run ends with the deadline's stop reason.
    pub(super) async fn stopped_at_deadline(&mut self, stop: StopReason) -> Result<Ending, Error> {
        self.close_open_calls(&format!("the run stopped: {stop}"))
            .await?;
        let ending = self.machine.interrupt(Interruption::Deadline(stop));
        if self.scope.reports_messages() {
            self.announce().await?;
        }
        self.stop_event(ending.stop.clone(), None).await?;
        Ok((None, ending.stop))
    }

    /// Closes the calls that were under way when the run was interrupted with their error
    /// events (`why` is their error); what those hooks decide cannot change the run's end.
    pub(super) async fn close_open_calls(&mut self, why: &str) -> Result<(), Error> {
        for open in self.scope.engine.take_open_hooks() {
            let ev = HookFailed::new(
                open.hook,
                open.event,
                open.started.elapsed(),
                format!("interrupted: {why}"),
                open.advisory,
            );
            self.scope.hook(ev).await?;
        }
        if std::mem::take(&mut self.model_open) {
            // The turn under way ends with nothing: an aborted, empty response.
            let response = ModelResponse {
                finish_reason: FinishReason::Aborted(why.to_string()),
                ..ModelResponse::default()
            };
            let ev = AfterModel::from_model(self.model_name.clone(), response);
            self.scope.hook(ev).await?;
        }
        for open in self.open_calls.take() {
            let error = format!("the call did not finish: {why}");
            match open {
                OpenCall::Tool { call, input } => {
                    self.scope
                        .hook(ToolFailed::for_call(call, input, error))
                        .await?;
                }
                OpenCall::SubAgent { agent, input } => {
                    self.scope
                        .hook(SubAgentFailed::new(agent, input, error))
                        .await?;
                }
            }
        }
        Ok(())
    }

    pub(super) async fn end(
        mut self: Box<Self>,
        output: Option<Value>,
        stop: StopReason,
    ) -> Result<Finished, Error> {
        // The outcome is stored before RunEnd hooks run: a hook that fails now cannot make a
        // resume do the finished work again. When it cannot be stored, the run fails at its last
        // checkpoint (a resume does the last step again) and no RunEnd hook runs.
        if stop != StopReason::Cancelled
            && let Err(e) = self.checkpoint(Some(&stop), output.as_ref()).await
        {
            return Err(self.fail(e).await);
        }
        if self.scope.wants(Events::RUN_END) {
            let ev = RunEnd::new(
                stop.clone(),
                output.clone(),
                self.machine.usage,
                self.machine.step,
            );
            self.scope.hook(ev).await?;
        }
        let run_id = self.scope.context().run_id().to_string();
        let s = stop.clone();
        self.scope.engine.send_event(|p| RunEvent::RunFinished {
            run_id: run_id.clone(),
            stop: s,
            agent_path: p.clone(),
        });
        // The outcome is stored already: a store that cannot take the events that came after it
        // (RunEnd's, the finish) cannot change it, and the caller is told what the store holds.
        if let Err(store_error) = Box::pin(self.save_events()).await {
            tracing::warn!(%store_error, "the events after the run's outcome were not saved");
        }
        self.release();
        let state = self.scope.engine.take_state(Box::new(()));
        let session_id = self.scope.context().session_id().map(str::to_owned);
        Ok(Finished {
            run_id,
            session_id,
            output,
            stop,
            machine: self.machine,
            state,
        })
    }

    /// Stops renewing the run's lease (the last save released it, or the run failed and lets it
    /// expire).
    pub(super) fn release(&mut self) {
        if let Some(d) = &mut self.durable {
            d.keeper = None;
        }
    }
}
