//! Dispatch: runs an event through its hooks in order, applying each hook's policy.

use super::error::panic_message;
use super::registry::{Entry, Event, Handles};
use super::{
    Events, HookCtx, HookError, HookFailed, HookFailure, HookFinished, HookStarted, Hooks,
};
use crate::RunContext;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use std::time::{Duration, Instant};

impl Hooks {
    /// Runs `ev` through the hooks of its event and returns it as the last hook left it.
    ///
    /// Before-events run in priority order, after/end/error events in reverse; a terminal decision
    /// ends the chain. A failing hook fails the dispatch (with an error naming it and the event)
    /// unless it is advisory. Meta events (HookStarted, HookFinished, HookFailed) are fired
    /// around each hook when some hook wants them.
    pub async fn dispatch<E: Event>(&self, ev: E, run: &RunContext) -> Result<E, HookError> {
        self.dispatch_decided(ev, run).await.map(|(ev, _)| ev)
    }

    /// Like [`dispatch`](Self::dispatch), and also returns the name of the hook that took a
    /// terminal decision, if one did.
    pub async fn dispatch_decided<E: Event>(
        &self,
        ev: E,
        run: &RunContext,
    ) -> Result<(E, Option<Arc<str>>), HookError> {
        let list = E::list(self.lists());
        if list.is_empty() {
            return Ok((ev, None));
        }
        let observe = self.wants(Events::META) && !Events::META.contains(E::KIND.flag());
        run_chain(list, ev, run, if observe { Some(self) } else { None }).await
    }
}

async fn run_chain<E: Event>(
    list: &[Entry<E>],
    mut ev: E,
    run: &RunContext,
    observers: Option<&Hooks>,
) -> Result<(E, Option<Arc<str>>), HookError> {
    let n = list.len();
    let reverse = E::KIND.is_reverse();
    for i in 0..n {
        let entry = &list[if reverse { n - 1 - i } else { i }];
        let meta = &*entry.meta;
        let ctx = HookCtx::new(run.clone(), meta.name.clone());
        let started = match observers {
            Some(obs) => {
                let start = HookStarted {
                    hook: meta.name.clone(),
                    event: E::KIND,
                };
                observe(obs, start, run).await?;
                Some(Instant::now())
            }
            None => None,
        };
        let backup = if meta.advisory {
            Some(ev.clone())
        } else {
            None
        };
        match invoke(&*entry.handler, ev, &ctx, meta.timeout).await {
            Ok(next) => {
                ev = next;
                if let (Some(obs), Some(t0)) = (observers, started) {
                    let done = HookFinished {
                        hook: meta.name.clone(),
                        event: E::KIND,
                        duration: t0.elapsed(),
                    };
                    observe(obs, done, run).await?;
                }
                if ev.decided() {
                    return Ok((ev, Some(meta.name.clone())));
                }
            }
            Err(failure) => {
                let err = HookError {
                    hook: meta.name.to_string(),
                    event: E::KIND,
                    failure,
                };
                if let (Some(obs), Some(t0)) = (observers, started) {
                    let failed = HookFailed {
                        hook: meta.name.clone(),
                        event: E::KIND,
                        duration: t0.elapsed(),
                        error: err.failure.to_string(),
                        advisory: meta.advisory,
                    };
                    observe(obs, failed, run).await?;
                }
                match backup {
                    Some(before) => {
                        tracing::warn!(hook = %err.hook, event = %err.event, error = %err.failure, "advisory hook failed; the run goes on");
                        ev = before;
                    }
                    None => return Err(err),
                }
            }
        }
    }
    Ok((ev, None))
}

/// Dispatches a meta event to its observers, without meta events of its own.
async fn observe<M: Event>(hooks: &Hooks, ev: M, run: &RunContext) -> Result<(), HookError> {
    let list = M::list(hooks.lists());
    if !list.is_empty() {
        Box::pin(run_chain(list, ev, run, None)).await?;
    }
    Ok(())
}

/// Calls one hook, turning an error, a panic (while creating or polling its future) and a timeout
/// alike into a [`HookFailure`].
async fn invoke<E: Event>(
    handler: &dyn Handles<E>,
    ev: E,
    ctx: &HookCtx,
    timeout: Option<Duration>,
) -> Result<E, HookFailure> {
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.handle(ev, ctx))) {
        Ok(fut) => AssertUnwindSafe(fut).catch_unwind(),
        Err(panic) => return Err(HookFailure::Panic(panic_message(panic))),
    };
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, fut).await {
            Ok(r) => r,
            Err(_) => return Err(HookFailure::Timeout(limit)),
        },
        None => fut.await,
    };
    match outcome {
        Ok(Ok(ev)) => Ok(ev),
        Ok(Err(e)) => Err(HookFailure::Error(e.to_string())),
        Err(panic) => Err(HookFailure::Panic(panic_message(panic))),
    }
}
