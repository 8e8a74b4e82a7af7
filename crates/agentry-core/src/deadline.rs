//! Time limits that cost nothing when the work finishes at once.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

/// The work did not finish within its time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

/// Runs `work` with a time limit. The work is polled once first: when it finishes then (a hook
/// that does not await, a tool that answers from memory), no timer is armed at all, so a limit
/// on the hot path costs nothing; otherwise the limit counts from that first poll.
pub async fn within<F: Future>(limit: Duration, work: F) -> Result<F::Output, Elapsed> {
    let mut work = pin!(work);
    if let Poll::Ready(out) = futures::poll!(work.as_mut()) {
        return Ok(out);
    }
    tokio::time::timeout(limit, work).await.map_err(|_| Elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_that_finishes_in_time_gives_its_output_and_late_work_elapses() {
        assert_eq!(within(Duration::from_secs(1), async { 7 }).await, Ok(7));
        let quick = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            8
        };
        assert_eq!(within(Duration::from_secs(1), quick).await, Ok(8));
        let slow = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            9
        };
        assert_eq!(within(Duration::from_secs(1), slow).await, Err(Elapsed));
    }
}
