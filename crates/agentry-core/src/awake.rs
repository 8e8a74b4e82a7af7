//! Waiting for an answer that usually comes within microseconds, without putting the thread to
//! sleep for it.
//!
//! A thread that parks while it waits (its CPU going idle) can take tens of microseconds to wake
//! on a virtual machine, more than an answer from a process on the same machine takes to come.
//! [`awake_for`] keeps the waiting task polling, and its runtime polling for I/O, for a short
//! while before it waits asleep: agentry's calls to local processes (persistent hook processes,
//! MCP servers on stdio) wait this way.

use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};

/// How long agentry's calls to a local process wait awake for their answer
/// ([`awake_for`]) before they wait asleep.
pub const LOCAL_ANSWER: Duration = Duration::from_micros(100);

/// Awaits `fut`: for up to `spin` it is polled between the runtime's other work (each time the
/// task yields, the runtime goes on with its other tasks and polls for I/O, so the answer's
/// arrival is seen at once), then it is awaited as usual. Other tasks are not held up; the
/// cost is CPU time while the answer is awaited, at most `spin` per call.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use agentry_core::awake::{LOCAL_ANSWER, awake_for};
/// let (tx, rx) = tokio::sync::oneshot::channel();
/// tokio::spawn(async move { tx.send(42).unwrap() });
/// assert_eq!(awake_for(LOCAL_ANSWER, rx).await, Ok(42));
/// # }
/// ```
pub async fn awake_for<F: Future>(spin: Duration, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let until = Instant::now() + spin;
    loop {
        if let Poll::Ready(out) = futures::poll!(fut.as_mut()) {
            return out;
        }
        if Instant::now() >= until {
            return fut.await;
        }
        tokio::task::yield_now().await;
    }
}
