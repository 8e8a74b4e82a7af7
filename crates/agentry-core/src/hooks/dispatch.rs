//! Dispatch: runs an event through its hooks in order, applying each hook's policy.

use super::HookName;
use super::error::panic_message;
use super::events::Decides;
use super::registry::{Entry, Event, Handler, Handles, HandlesSync};
use super::{
    Events, HookCtx, HookError, HookFailed, HookFailure, HookFinished, HookStarted, Hooks,
};
use crate::RunContext;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;

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
    ) -> Result<(E, Option<HookName>), HookError> {
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
    ev: E,
    run: &RunContext,
    observers: Option<&Hooks>,
) -> Result<(E, Option<HookName>), HookError> {
    let n = list.len();
    let reverse = E::KIND.is_reverse();
    let mut ctx = HookCtx::new(run.clone(), list[0].meta.name.clone());
    // The event stays in this slot: synchronous hooks change it in place; asynchronous ones
    // take it and give it back.
    let mut slot = Some(ev);
    for i in 0..n {
        let entry = &list[if reverse { n - 1 - i } else { i }];
        let meta = &*entry.meta;
        ctx.set_hook(meta.name.clone());
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
        let backup = if meta.advisory { slot.clone() } else { None };
        let outcome = match &entry.handler {
            Handler::Sync(h) => match slot.as_mut() {
                Some(ev) => invoke_sync(&**h, ev, &ctx),
                None => unreachable!("the event is in its slot between hooks"),
            },
            Handler::Async(h) => match slot.take() {
                Some(ev) => invoke(&**h, ev, &ctx, meta.timeout)
                    .await
                    .map(|next| slot = Some(next)),
                None => unreachable!("the event is in its slot between hooks"),
            },
        };
        match outcome {
            Ok(()) => {
                if let (Some(obs), Some(t0)) = (observers, started) {
                    let done = HookFinished {
                        hook: meta.name.clone(),
                        event: E::KIND,
                        duration: t0.elapsed(),
                    };
                    observe(obs, done, run).await?;
                }
                if slot.as_ref().is_some_and(Decides::decided) {
                    return Ok((slot.expect("checked above"), Some(meta.name.clone())));
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
                        slot = Some(before);
                    }
                    None => return Err(err),
                }
            }
        }
    }
    Ok((
        slot.expect("the event is in its slot after the chain"),
        None,
    ))
}

impl Hooks {
    /// Dispatches a meta event to its observers (used by middleware).
    pub(crate) async fn observe<M: Event>(&self, ev: M, ctx: &RunContext) -> Result<(), HookError> {
        observe(self, ev, ctx).await
    }
}

/// Dispatches a meta event to its observers, without meta events of its own.
async fn observe<M: Event>(hooks: &Hooks, ev: M, run: &RunContext) -> Result<(), HookError> {
    let list = M::list(hooks.lists());
    if !list.is_empty() {
        Box::pin(run_chain(list, ev, run, None)).await?;
    }
    Ok(())
}

/// Calls one synchronous hook in place, turning an error and a panic into a [`HookFailure`].
fn invoke_sync<E: Event>(
    handler: &dyn HandlesSync<E>,
    ev: &mut E,
    ctx: &HookCtx,
) -> Result<(), HookFailure> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| handler.handle(ev, ctx))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(HookFailure::Error(e.to_string())),
        Err(panic) => Err(HookFailure::Panic(panic_message(panic))),
    }
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
