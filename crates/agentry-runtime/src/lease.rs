//! Holding a durable run's lease while a driver runs it: renewed in the background every third of
//! its duration (at least every [`CANCEL_POLL`]), and reported lost when another process took
//! the run over, so the driver stops before its next effect. Each renewal also reads the run's
//! cancel request ([`RunStore::request_cancel`], made by any process) and cancels the run here
//! when there is one.

use agentry_core::{RunStore, StoreError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a run's lease lasts unless renewed, by default: a process that dies leaves its runs
/// claimable this long after its last renewal.
pub(crate) const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The longest a cancel request made in another process waits to be seen.
pub(crate) const CANCEL_POLL: Duration = Duration::from_secs(2);

/// Renews one run's lease until dropped.
pub(crate) struct LeaseKeeper {
    task: JoinHandle<()>,
}

/// Where a lease keeper reports a lost lease: the driver watches `token` and takes the error.
#[derive(Clone, Default)]
pub(crate) struct LeaseLoss {
    token: CancellationToken,
    error: Arc<Mutex<Option<StoreError>>>,
}

impl LeaseLoss {
    /// Resolves once the lease is lost.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// True once the lease is lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The error that reported the loss.
    pub(crate) fn error(&self) -> Option<StoreError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn lose(&self, error: StoreError) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
        self.token.cancel();
    }
}

impl LeaseKeeper {
    /// Starts renewing `run_id`'s lease `lease` for `ttl` at a time.
    pub(crate) fn start(
        store: Arc<dyn RunStore>,
        run_id: String,
        lease: u64,
        ttl: Duration,
        loss: LeaseLoss,
        cancel: CancellationToken,
    ) -> LeaseKeeper {
        let every = (ttl / 3).clamp(Duration::from_millis(1), CANCEL_POLL);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match store.renew(&run_id, lease, ttl).await {
                    // The run paused or ended: the save that said so released the lease,
                    // and the keeper is about to be dropped.
                    Ok(renewal) if renewal.released => return,
                    Ok(renewal) => {
                        if renewal.cancel_requested {
                            tracing::info!(run_id = %run_id, "another process asked to cancel the run");
                            cancel.cancel();
                        }
                    }
                    Err(e @ (StoreError::Conflict { .. } | StoreError::NotFound { .. })) => {
                        tracing::warn!(run_id = %run_id, error = %e, "the run's lease was lost; the run stops before its next effect");
                        loss.lose(e);
                        return;
                    }
                    // The store may come back before the lease runs out; if it does not, the
                    // next checkpoint fails with a conflict.
                    Err(e) => {
                        tracing::warn!(run_id = %run_id, error = %e, "renewing the run's lease failed; trying again")
                    }
                }
            }
        });
        LeaseKeeper { task }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}
