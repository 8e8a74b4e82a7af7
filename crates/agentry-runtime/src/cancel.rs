//! Cancelling a run that no process drives because it waits for approval.

use super::{Runtime, resume_error};
use agentry_core::store::MessageLog;
use agentry_core::{Checkpoint, Error, RunStatus, StopReason};

impl Runtime {
    /// Cancels run `run_id`, paused for approval in the runtime's store, without deciding its
    /// waiting calls: it is stored `cancelled` (as a run cancelled while under way is), its
    /// waiting calls never ran, and [resuming](Runtime::resume) it asks for their approval
    /// again. No hook runs, as nothing of the run does.
    ///
    /// A run that is not waiting for approval is an error ([`Error::Resume`]) that says where
    /// it stands: cancel a run under way through its handle
    /// ([`RunHandle::cancel`](crate::RunHandle::cancel)) or the store's cancel request; a run
    /// that a process took over meanwhile is [`StoreError::Leased`](agentry_core::StoreError)
    /// or `Conflict`.
    pub async fn cancel_paused(&self, run_id: &str) -> Result<(), Error> {
        let stored = self.load_run(run_id).await?;
        if !matches!(
            stored.snapshot.stop,
            Some(StopReason::AwaitingApproval { .. })
        ) {
            return Err(resume_error(
                run_id,
                format!(
                    "it is not waiting for approval (it is {}); only a paused run is cancelled this way",
                    stored.snapshot.status()
                ),
            ));
        }
        let store = self
            .inner
            .store
            .as_ref()
            .expect("a run was loaded from the store");
        let lease = store
            .claim(
                run_id,
                stored.lease,
                RunStatus::AwaitingApproval,
                self.inner.lease_ttl,
            )
            .await?;
        let mut snapshot = stored.snapshot.clone();
        snapshot.stop = Some(StopReason::Cancelled);
        let log = MessageLog::of_stored(&stored).append(&snapshot.messages);
        store
            .save(Checkpoint {
                snapshot: &snapshot,
                lease,
                revision: log.revision,
                appended: &log.appended,
                layout: &log.layout,
                events: &[],
                hold: None,
            })
            .await?;
        Ok(())
    }
}
