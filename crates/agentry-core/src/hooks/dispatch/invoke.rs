//! One hook's call: its future under an unwind guard and its time limit.

use crate::describe::panic_message;
use crate::hooks::future::Panicked;
use crate::hooks::{HookCtx, HookFailure, HookResult};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

/// Runs one hook's future, putting the event it returns in `out`, and turning an error, a panic
/// (while making or polling its future) and a timeout alike into a [`HookFailure`]. The future is
/// made by the caller and pinned where it was made, so its inline storage is never copied: a hook
/// that completes at once costs no allocation, and no timer.
pub(super) fn invoke<'p, E, F: Future<Output = HookResult<E>>>(
    hook: Pin<&'p mut F>,
    out: Option<&'p mut Option<E>>,
    ctx: &HookCtx,
    timeout: Option<Duration>,
) -> Invoke<'p, E, F> {
    // A hook without a timeout of its own gets the run's default: no hook waits forever.
    let (limit, own) = match timeout {
        Some(limit) => (limit, true),
        None => (ctx.run().hook_timeout(), false),
    };
    Invoke {
        hook,
        out,
        timer: None,
        limit,
        own,
    }
}

/// One hook's call: its future, polled under an unwind guard, and its time limit, armed only
/// when the first poll does not finish it (as [`within`](crate::deadline::within) does).
pub(super) struct Invoke<'p, E, F> {
    hook: Pin<&'p mut F>,
    // Where the event goes when the hook gives it back (nowhere for a read-only view).
    out: Option<&'p mut Option<E>>,
    // Boxed: armed only when the hook waits.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    limit: Duration,
    // Whether the limit is the hook's own timeout (or the run's default).
    own: bool,
}

impl<E, F: Future<Output = HookResult<E>>> Future for Invoke<'_, E, F> {
    type Output = Result<(), HookFailure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (hook, out) = (this.hook.as_mut(), this.out.as_deref_mut());
        // The event is put in place inside the guard, so only a small result leaves it.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| match hook.poll(cx) {
            Poll::Ready(Ok(ev)) => {
                if let Some(out) = out {
                    *out = Some(ev);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }));
        match polled {
            Ok(Poll::Ready(Ok(()))) => return Poll::Ready(Ok(())),
            Ok(Poll::Ready(Err(e))) => {
                return Poll::Ready(Err(match e.downcast::<Panicked>() {
                    Ok(panicked) => HookFailure::Panic(panicked.0),
                    Err(e) => HookFailure::Error(e.to_string()),
                }));
            }
            Err(panic) => return Poll::Ready(Err(HookFailure::Panic(panic_message(panic)))),
            Ok(Poll::Pending) => {}
        }
        // Not finished at once: the limit counts from the first poll.
        let limit = this.limit;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) if this.own => Poll::Ready(Err(HookFailure::Timeout(limit))),
            Poll::Ready(()) => Poll::Ready(Err(HookFailure::DefaultTimeout(limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}
