//! Checkpoints: the run's snapshot, saved under its lease with the messages and events since
//! the last one, handed over without waiting at a step's end.

use super::{Driver, Handed};
use crate::lease::LeaseKeeper;
use agentry_core::{
    Checkpoint, Error, QueuedSave, RunSnapshot, SNAPSHOT_VERSION, StopReason, StoreError,
};
use serde_json::Value;
use tokio::sync::watch;

/// The outcome of a checkpoint handed over without waiting, which tells `told` as soon as it
/// is written (on a task of its own: the driver learns the outcome only at its next save).
fn told_when_written(
    outcome: QueuedSave,
    told: watch::Sender<Option<bool>>,
    store: &str,
) -> QueuedSave {
    let store = store.to_owned();
    let written = tokio::spawn(async move {
        let outcome = outcome.await;
        if outcome.is_ok() {
            told.send_replace(Some(true));
        }
        outcome
    });
    Box::pin(async move {
        written.await.unwrap_or_else(|e| {
            Err(StoreError::backend(
                store,
                format!("a checkpoint's write ended: {e}"),
            ))
        })
    })
}

impl Driver {
    /// Marks the run failed with `error` at its last checkpoint (or where it stands, when it
    /// failed before its first), with the events recorded since, and releases its lease.
    pub(super) async fn save_failure(&mut self, error: &Error) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let mut snapshot = match self.last_checkpoint.take() {
            Some(s) => s,
            None => self.snapshot(None, None)?,
        };
        if snapshot.stop.is_none() {
            snapshot.error = Some(self.scope.context().redact(&error.to_string()).into_owned());
        }
        self.save(&snapshot, true).await?;
        self.last_checkpoint = Some(snapshot);
        Ok(())
    }

    /// Saves the events recorded since the last checkpoint with that checkpoint again (when the
    /// run ends without a new one: cancelled, or events came after the final one).
    pub(super) async fn save_events(&mut self) -> Result<(), Error> {
        if !self.scope.engine.has_recorded() {
            return Ok(());
        }
        match self.last_checkpoint.take() {
            Some(snapshot) => {
                self.save(&snapshot, true).await?;
                self.last_checkpoint = Some(snapshot);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Hands the run as it stands to the store without waiting for it to be written: the next
    /// save waits for it first. Only for checkpoints whose next effect is a model turn (no tool
    /// runs, nothing ends, before the next checkpoint).
    pub(super) async fn queued_checkpoint(&mut self) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let snapshot = self.snapshot(None, None)?;
        self.save_as(&snapshot, false, true).await?;
        self.last_checkpoint = Some(snapshot);
        Ok(())
    }

    /// Saves a snapshot when the runtime has a store.
    pub(super) async fn checkpoint(
        &mut self,
        stop: Option<&StopReason>,
        output: Option<&Value>,
    ) -> Result<(), Error> {
        if self.rt.store.is_none() {
            return Ok(());
        }
        let snapshot = self.snapshot(stop.cloned(), output.cloned())?;
        self.save(&snapshot, stop.is_some()).await?;
        self.last_checkpoint = Some(snapshot);
        if let Some(d) = &self.durable
            && d.in_body
            && (self.scope.context().is_cancelled()
                || d.loss.is_lost()
                || self.scope.engine.deadline_has_passed())
        {
            // Cancelled (or taken over, or past its deadline) while this checkpoint was written,
            // which an interruption waits for: stop here, before any further effect, and let it
            // take the run from this checkpoint.
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    /// Saves `snapshot` with the messages it adds to the run's log and the events recorded since
    /// the last save, under the run's lease, which it goes on holding while the run is under way
    /// and releases when the run paused or ended. It takes the snapshot by reference: a snapshot
    /// moved into this future would be held twice in the future of every step that checkpoints.
    pub(super) async fn save(
        &mut self,
        snapshot: &RunSnapshot,
        release: bool,
    ) -> Result<(), Error> {
        self.save_as(snapshot, release, false).await
    }

    /// Saves as [`save`](Self::save) does; when `queued`, hands the checkpoint over and returns
    /// without waiting for it to be written (the next save waits for it first).
    ///
    /// When a checkpoint is not written (this one, or the one handed over before it), the run's
    /// message log goes back to the last checkpoint written and the events of those that were
    /// not are put back, so the next save (the failure's) writes them; the store refuses a
    /// checkpoint handed over after one that failed, so it never holds half a sequence.
    pub(super) async fn save_as(
        &mut self,
        snapshot: &RunSnapshot,
        release: bool,
        queued: bool,
    ) -> Result<(), Error> {
        let (Some(store), Some(durable)) = (self.rt.store.clone(), self.durable.as_mut()) else {
            return Ok(());
        };
        let events = self.scope.engine.take_recorded();
        let append = self.log.append(&snapshot.messages);
        let hold = (!release).then_some(self.rt.lease_ttl);
        durable.saving.send_replace(true);
        let handed = store
            .save_queued(
                Checkpoint {
                    snapshot,
                    lease: self.lease,
                    revision: append.revision,
                    appended: &append.appended,
                    layout: &append.layout,
                    events: &events,
                    hold,
                },
                queued,
            )
            .await;
        let this = match handed {
            Ok(outcome) => {
                self.log.handed(snapshot.messages.clone(), append.layout);
                Ok(Handed { outcome, events })
            }
            Err(e) => Err((e, events)),
        };
        // The checkpoint handed over before this one is written first; its outcome comes first.
        // What was not written: the events of the checkpoints that were not, oldest first.
        let mut unwritten = Vec::new();
        let mut failure = None;
        if let Some(Handed { outcome, events }) = durable.pending().take() {
            match outcome.await {
                Ok(()) => self.log.written(),
                Err(e) => {
                    unwritten = events;
                    failure = Some(e);
                }
            }
        }
        let saved = match (this, failure) {
            (Err((e, events)), failure) => {
                unwritten.extend(events);
                Err(failure.unwrap_or(e))
            }
            // It follows a checkpoint that failed: the store refuses it.
            (Ok(handed), Some(e)) => {
                unwritten.extend(handed.events);
                Err(e)
            }
            (Ok(mut handed), None) if queued => {
                if let Some(told) = self.stored.take() {
                    handed.outcome = told_when_written(handed.outcome, told, store.name());
                }
                *durable.pending() = Some(handed);
                Ok(())
            }
            (Ok(Handed { outcome, events }), None) => match outcome.await {
                Ok(()) => {
                    self.log.written();
                    if let Some(told) = self.stored.take() {
                        told.send_replace(Some(true));
                    }
                    Ok(())
                }
                Err(e) => {
                    unwritten.extend(events);
                    Err(e)
                }
            },
        };
        durable.saving.send_replace(false);
        if let Err(e) = saved {
            self.log.failed();
            self.scope.engine.restore_recorded(unwritten);
            return Err(e.into());
        }
        match hold {
            Some(ttl) if durable.keeper.is_none() => {
                durable.keeper = Some(LeaseKeeper::start(
                    store,
                    snapshot.run_id.clone(),
                    self.lease,
                    ttl,
                    durable.loss.clone(),
                    self.scope.context().cancellation().clone(),
                ));
            }
            Some(_) => {}
            None => durable.keeper = None,
        }
        Ok(())
    }

    /// The run as it stands, serializable.
    pub(crate) fn snapshot(
        &self,
        stop: Option<StopReason>,
        output: Option<Value>,
    ) -> Result<RunSnapshot, Error> {
        let ctx = &self.scope.engine;
        let info = ctx.context().info();
        Ok(RunSnapshot {
            version: SNAPSHOT_VERSION,
            run_id: ctx.context().run_id().to_string(),
            parent_run_id: ctx.context().parent_run_id().map(str::to_string),
            agent: self.def.name.to_string(),
            session_id: info.session_id.clone(),
            user_id: info.user_id.clone(),
            tags: info.tags.clone(),
            metadata: info.metadata.clone(),
            messages: self.machine.messages.clone(),
            state: ctx.context().state_json()?,
            step: self.machine.step,
            usage: self.machine.usage,
            retried_usage: self.machine.retried_usage,
            model_calls: self.machine.model_calls,
            output_attempts: self.machine.output_attempts,
            pending_tool_calls: self.machine.pending_calls().to_vec(),
            settled_results: self.machine.settled.clone(),
            pending_batch: self.machine.batch.clone(),
            stop,
            output,
            error: None,
            hooks: self.stored_hooks.clone(),
        })
    }
}
