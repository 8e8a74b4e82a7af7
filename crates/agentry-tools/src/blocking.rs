//! Blocking file work run off the async runtime, and told when the call that started it is
//! dropped.

use crate::Error;
use agentry_core::ToolFailure;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when the call that started a piece of blocking work is dropped (cancelled, timed
/// out): long searches check it and stop, instead of running on unseen.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cancelled(Arc<AtomicBool>);

impl Cancelled {
    /// True once the call was dropped.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets [`Cancelled`] when dropped.
struct SetOnDrop(Cancelled);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking file work on tokio's blocking pool. The work is told, through [`Cancelled`],
/// when the call is dropped.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolFailure>
where
    T: Send + 'static,
    F: FnOnce(Cancelled) -> Result<T, Error> + Send + 'static,
{
    let cancelled = Cancelled::default();
    let _guard = SetOnDrop(cancelled.clone());
    match tokio::task::spawn_blocking(move || work(cancelled)).await {
        Ok(result) => result.map_err(ToolFailure::from),
        Err(e) => Err(ToolFailure::new(format!("the tool's work failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_dropped_call_tells_its_blocking_work_to_stop() {
        let (tx, rx) = std::sync::mpsc::channel();
        let call = blocking(move |cancelled: Cancelled| {
            while !cancelled.is_set() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = tx.send(());
            Ok(())
        });
        // The call overruns a limit and is dropped, as the runtime's tool timeout does.
        assert!(
            tokio::time::timeout(Duration::from_millis(50), call)
                .await
                .is_err()
        );
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the work saw the cancellation");
    }
}
