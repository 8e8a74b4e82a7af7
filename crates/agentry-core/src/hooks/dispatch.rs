//! Dispatch: runs an event through its hooks in order, applying each hook's policy.

use super::HookName;
use super::events::Decides;
use super::future::Panicked;
use super::registry::{Entry, Event, Handler, HandlesSync};
use super::trace::{HookStep, Traced};
use super::{
    Events, HookCtx, HookError, HookFailed, HookFailure, HookFinished, HookResult, HookStarted,
    Hooks,
};
use crate::RunContext;
use crate::describe::panic_message;
use crate::run::context::LentHookCtx;
use futures::future::{BoxFuture, Either};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::{Duration, Instant};

/// What a dispatch returns, possibly before any await.
pub type Dispatched<E> = Result<(E, Option<HookName>), HookError>;

/// The future of a dispatch: ready at once when every hook of the event is synchronous (no
/// allocation, no state machine), boxed when some hook awaits.
pub enum Dispatch<'a, E> {
    /// Done already.
    Ready(Option<Dispatched<E>>),
    /// Some hook awaits.
    Pending(BoxFuture<'a, Dispatched<E>>),
}

// Neither variant is structurally pinned: the ready value is moved out, the pending future is
// boxed. So the dispatch is `Unpin` whatever `E` is.
impl<E> Unpin for Dispatch<'_, E> {}

impl<E> Future for Dispatch<'_, E> {
    type Output = Dispatched<E>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Dispatch::Ready(out) => {
                Poll::Ready(out.take().expect("a dispatch is polled after it completed"))
            }
            Dispatch::Pending(fut) => fut.as_mut().poll(cx),
        }
    }
}

impl Hooks {
    /// Runs `ev` through the hooks of its event and returns it as the last hook left it.
    ///
    /// Every hook of the event sees it. Forward events (before, start, streamed) run in priority
    /// order, and the first decision stands: the hooks after the decider see the decided event
    /// read-only (a copy, whose changes are dropped). Reverse events (after, end, error) run in
    /// reverse order, innermost first: an outer hook sees the inner hooks' decision and may
    /// replace it, and the outermost decision stands. Either way, the highest-priority hook that
    /// decides is the one whose decision stands. A failing hook fails the dispatch (with an error
    /// naming it and the event) unless it is advisory. Meta events (HookStarted, HookFinished, HookFailed) are fired
    /// around each hook when some hook wants them.
    pub async fn dispatch<E: Event>(&self, ev: E, run: &RunContext) -> Result<E, HookError> {
        self.dispatch_decided(ev, run).await.map(|(ev, _)| ev)
    }

    /// Like [`dispatch`](Self::dispatch), and also returns the name of the hook whose decision
    /// stands, if the event carries one.
    pub fn dispatch_decided<'a, E: Event>(
        &'a self,
        mut ev: E,
        run: &'a RunContext,
    ) -> Dispatch<'a, E> {
        if let Some(out) = self.dispatch_sync(&mut ev, run) {
            return Dispatch::Ready(Some(out.map(|by| (ev, by))));
        }
        Dispatch::Pending(self.dispatch_chain(ev, run))
    }

    /// The general path, for runtimes that tried [`dispatch_sync`](Self::dispatch_sync) first:
    /// runs the whole chain as a future, awaiting asynchronous hooks and firing meta events.
    pub fn dispatch_chain<'a, E: Event>(
        &'a self,
        ev: E,
        run: &'a RunContext,
    ) -> BoxFuture<'a, Dispatched<E>> {
        Box::pin(async move {
            let mut slot = Some(ev);
            let by = self.dispatch_chain_in(&mut slot, run).await?;
            Ok((slot.expect("the event is in its slot after the chain"), by))
        })
    }

    /// [`dispatch_chain`](Self::dispatch_chain) on the event in `slot`, where it stays: the
    /// hooks that change it in place find it there, and the future is smaller by the event.
    /// Returns the name of the hook whose decision stands, if one did. After a failure the slot
    /// may be empty (a hook that failed had the event).
    ///
    /// When every hook of the event changes it in place (synchronous and `on_mut` hooks) and no
    /// meta-event observer watches, the chain runs inside the returned future, with no
    /// allocation; otherwise the returned future holds the boxed general chain.
    pub fn dispatch_chain_in<'a, E: Event>(
        &'a self,
        slot: &'a mut Option<E>,
        run: &'a RunContext,
    ) -> impl Future<Output = Result<Option<HookName>, HookError>> + Send + 'a {
        let observe = self.wants(Events::META) && !Events::META.contains(E::KIND.flag());
        let list = E::list(self.lists());
        if !observe && self.in_place_only(E::KIND.flag()) {
            return Either::Left(run_chain_in_place(list, slot, run));
        }
        let general: BoxFuture<'a, _> =
            Box::pin(run_chain(list, slot, run, observe.then_some(self), None));
        Either::Right(general)
    }

    /// Runs `ev` through the hooks of its event like [`dispatch_decided`](Self::dispatch_decided),
    /// and records what each hook did: its time, whether it decided, failed or saw the event
    /// read-only, and the event as it left it. For tools that show a chain's work (`agentry
    /// hooks test`) and for tests; runs use the untraced dispatch.
    pub async fn dispatch_traced<E: Event>(&self, ev: E, run: &RunContext) -> Traced<E> {
        let observe = self.wants(Events::META) && !Events::META.contains(E::KIND.flag());
        let mut steps = Vec::new();
        let mut slot = Some(ev);
        let outcome = run_chain(
            E::list(self.lists()),
            &mut slot,
            run,
            observe.then_some(self),
            Some(&mut steps),
        )
        .await
        .map(|by| {
            let ev = slot.expect("the event is in its slot after the chain");
            (ev, by)
        });
        Traced { steps, outcome }
    }

    /// The synchronous fast path, for runtimes: when the event has no hooks, or only
    /// synchronous ones and no meta-event observer, runs them on `ev` in place and returns the
    /// outcome (the name of the hook that decided, if one did). Returns `None`, leaving `ev`
    /// untouched, when some hook must be awaited: use [`dispatch_decided`](Self::dispatch_decided).
    pub fn dispatch_sync<E: Event>(
        &self,
        ev: &mut E,
        run: &RunContext,
    ) -> Option<Result<Option<HookName>, HookError>> {
        let list = E::list(self.lists());
        if list.is_empty() {
            return Some(Ok(None));
        }
        let observed = self.wants(Events::META) && !Events::META.contains(E::KIND.flag());
        if observed || !self.sync_only(E::KIND.flag()) {
            return None;
        }
        let mut lent = LentHookCtx::new(run, &list[0].meta.name);
        let mut i = 0;
        let mut by = None;
        Some(
            match run_sync_stretch(list, E::KIND.is_reverse(), &mut i, ev, &mut lent, &mut by) {
                Stretch::End => Ok(standing(ev, by)),
                Stretch::Failed(err) => Err(err),
                Stretch::Async => unreachable!("every hook of this event is synchronous"),
            },
        )
    }
}

/// The hook whose decision stands, if the event carries one at the end of its chain.
fn standing<E: Event>(ev: &E, by: Option<HookName>) -> Option<HookName> {
    if ev.decided() { by } else { None }
}

/// Notes that the hook `name` took the decision that now stands, when it took one: on a forward
/// event only the first decision counts (later hooks see the event read-only); on a reverse event
/// a later (outer) hook's decision replaces an earlier one.
fn note_decision<E: Event>(ev: &E, marks_before: u32, name: &HookName, by: &mut Option<HookName>) {
    if ev.marks() != marks_before && ev.decided() {
        *by = Some(name.clone());
    }
}

async fn run_chain<E: Event>(
    list: &[Entry<E>],
    slot: &mut Option<E>,
    run: &RunContext,
    observers: Option<&Hooks>,
    mut trace: Option<&mut Vec<HookStep<E>>>,
) -> Result<Option<HookName>, HookError> {
    if list.is_empty() {
        return Ok(None);
    }
    let n = list.len();
    let reverse = E::KIND.is_reverse();
    // The context is lent to the hooks, as on the synchronous path: no reference counting per
    // event (a hook that keeps it clones it).
    let mut lent = LentHookCtx::new(run, &list[0].meta.name);
    // The event stays in its slot: synchronous and in-place hooks change it there; the other
    // asynchronous ones take it and give it back.
    // The hook whose decision stands so far. Once a forward event is decided, the hooks after
    // the decider see it read-only: each gets a copy, and what it does to the copy is dropped.
    let mut by: Option<HookName> = None;
    let mut i = 0;
    while i < n {
        let next_is_sync = matches!(
            list[if reverse { n - 1 - i } else { i }].handler,
            Handler::Sync(_)
        );
        if observers.is_none() && trace.is_none() && next_is_sync {
            // Fast path: a stretch of synchronous hooks runs as plain code, no await between.
            let ev = slot
                .as_mut()
                .expect("the event is in its slot between hooks");
            match run_sync_stretch(list, reverse, &mut i, ev, &mut lent, &mut by) {
                Stretch::End => break,
                Stretch::Failed(err) => return Err(err),
                Stretch::Async => {}
            }
        }
        let entry = &list[if reverse { n - 1 - i } else { i }];
        i += 1;
        let meta = &*entry.meta;
        lent.point_at(&meta.name);
        let ctx = lent.get();
        let started = match observers {
            Some(obs) => {
                let start = HookStarted::new(meta.name.clone(), E::KIND);
                observe(obs, start, run).await?;
                run.hook_opened(&meta.name, E::KIND, meta.advisory);
                Some(Instant::now())
            }
            None => trace.is_some().then(Instant::now),
        };
        let read_only = !reverse && by.is_some();
        // Boxed, as the traced copy and the read-only views that are awaited: kept inline, the
        // copies would grow the future of every dispatch.
        let backup = if meta.advisory && !read_only {
            slot.clone().map(Box::new)
        } else {
            None
        };
        let marks = slot.as_ref().map_or(0, Decides::marks);
        // A traced dispatch keeps the event as it was before the hook: a failing asynchronous
        // hook does not give it back, and its step still shows it.
        let traced_before = match trace {
            Some(_) => slot.clone().map(Box::new),
            None => None,
        };
        let outcome = match (&entry.handler, read_only) {
            (Handler::Sync(h), false) => match slot.as_mut() {
                Some(ev) => invoke_sync(&**h, ev, ctx),
                None => unreachable!("the event is in its slot between hooks"),
            },
            (Handler::Sync(h), true) => {
                let mut view = slot
                    .clone()
                    .expect("the event is in its slot between hooks");
                invoke_sync(&**h, &mut view, ctx)
            }
            (Handler::Async(h), false) => {
                // The event moves into the hook's future in a scope of its own, which ends
                // before the await: a local that lived across it would take the event's room
                // in this future.
                let hook = {
                    let ev = slot.take().expect("the event is in its slot between hooks");
                    h.handle(ev, ctx)
                };
                // Pinned where it was made: awaited without a move of its inline storage.
                futures::pin_mut!(hook);
                invoke(hook, Some(slot), ctx, meta.timeout).await
            }
            (Handler::Async(h), true) => {
                let hook = {
                    let view = slot
                        .clone()
                        .expect("the event is in its slot between hooks");
                    h.handle(view, ctx)
                };
                futures::pin_mut!(hook);
                invoke(hook, None, ctx, meta.timeout).await
            }
            (Handler::InPlace(h), false) => match slot.as_mut() {
                Some(ev) => {
                    let hook = h.handle(ev, ctx);
                    futures::pin_mut!(hook);
                    invoke(hook, None, ctx, meta.timeout).await
                }
                None => unreachable!("the event is in its slot between hooks"),
            },
            (Handler::InPlace(h), true) => {
                let mut view = Box::new(
                    slot.clone()
                        .expect("the event is in its slot between hooks"),
                );
                let hook = h.handle(&mut view, ctx);
                futures::pin_mut!(hook);
                invoke(hook, None, ctx, meta.timeout).await
            }
        };
        let took = started.map(|t0| t0.elapsed()).unwrap_or_default();
        // Only a traced dispatch keeps the failure's text.
        let failed_with = match (&trace, &outcome) {
            (Some(_), Err(failure)) => Some(failure.to_string()),
            _ => None,
        };
        match outcome {
            Ok(()) => {
                if let (Some(obs), Some(_)) = (observers, started) {
                    run.hook_closed(&meta.name, E::KIND);
                    let done = HookFinished::new(meta.name.clone(), E::KIND, took);
                    observe(obs, done, run).await?;
                }
                if !read_only && let Some(ev) = slot.as_ref() {
                    note_decision(ev, marks, &meta.name, &mut by);
                }
            }
            Err(failure) => {
                let err = HookError {
                    hook: meta.name.to_string(),
                    event: E::KIND,
                    failure,
                };
                if let (Some(obs), Some(t0)) = (observers, started) {
                    run.hook_closed(&meta.name, E::KIND);
                    let failed = HookFailed::new(
                        meta.name.clone(),
                        E::KIND,
                        t0.elapsed(),
                        err.failure.to_string(),
                        meta.advisory,
                    );
                    observe(obs, failed, run).await?;
                }
                if !meta.advisory {
                    if let (Some(steps), Some(ev)) = (
                        trace.as_deref_mut(),
                        slot.as_ref().or(traced_before.as_deref()),
                    ) {
                        steps.push(step(meta, took, read_only, false, failed_with, ev));
                    }
                    return Err(err);
                }
                advisory_failed(&err, run);
                if let Some(before) = backup {
                    *slot = Some(*before);
                }
            }
        }
        if let (Some(steps), Some(ev)) = (trace.as_deref_mut(), slot.as_ref()) {
            let decided = by.as_ref() == Some(&meta.name) && ev.marks() != marks;
            steps.push(step(meta, took, read_only, decided, failed_with, ev));
        }
    }
    let ev = slot
        .as_ref()
        .expect("the event is in its slot after the chain");
    Ok(standing(ev, by))
}

/// The chain of an event whose hooks all change it in place (synchronous and `on_mut` hooks)
/// and that no meta-event observer watches: [`run_chain`] without what only the other cases
/// need (a hook's by-value future, meta events, traces), so its future is a fraction of the size.
///
/// (A chain that mixes in by-value hooks, or that meta events or a trace watch, runs its
/// in-place hooks through [`run_chain`]'s general step. The step here is written inline on
/// purpose: as a helper, an `async fn` or even an inlined plain function for what follows the
/// call, it made an invocation 3–15 ns slower in W2, a tenth to a half of its whole cost.)
async fn run_chain_in_place<E: Event>(
    list: &[Entry<E>],
    slot: &mut Option<E>,
    run: &RunContext,
) -> Result<Option<HookName>, HookError> {
    let ev = slot
        .as_mut()
        .expect("the event is in its slot before the chain");
    let n = list.len();
    let reverse = E::KIND.is_reverse();
    let Some(first) = list.first() else {
        return Ok(None);
    };
    let mut lent = LentHookCtx::new(run, &first.meta.name);
    let mut by: Option<HookName> = None;
    let mut i = 0;
    while i < n {
        let entry = &list[if reverse { n - 1 - i } else { i }];
        let Handler::InPlace(h) = &entry.handler else {
            match run_sync_stretch(list, reverse, &mut i, ev, &mut lent, &mut by) {
                Stretch::End => break,
                Stretch::Failed(err) => return Err(err),
                Stretch::Async => continue,
            }
        };
        i += 1;
        let meta = &*entry.meta;
        lent.point_at(&meta.name);
        let ctx = lent.get();
        let read_only = !reverse && by.is_some();
        // The copies the rare cases need are boxed: kept inline, they would grow the future.
        let mut view;
        let target = if read_only {
            view = Box::new(ev.clone());
            &mut *view
        } else {
            &mut *ev
        };
        let backup = (meta.advisory && !read_only).then(|| Box::new(target.clone()));
        let marks = target.marks();
        let outcome = {
            let hook = h.handle(target, ctx);
            futures::pin_mut!(hook);
            invoke(hook, None, ctx, meta.timeout).await
        };
        match outcome {
            Ok(()) if !read_only => note_decision(target, marks, &meta.name, &mut by),
            Ok(()) => {}
            Err(failure) => {
                let err = HookError {
                    hook: meta.name.to_string(),
                    event: E::KIND,
                    failure,
                };
                if !meta.advisory {
                    return Err(err);
                }
                advisory_failed(&err, run);
                if let Some(before) = backup {
                    *target = *before;
                }
            }
        }
    }
    Ok(standing(ev, by))
}

/// One hook's step of a traced dispatch.
fn step<E: Clone>(
    meta: &super::registry::HookMeta,
    took: Duration,
    read_only: bool,
    decided: bool,
    failure: Option<String>,
    ev: &E,
) -> HookStep<E> {
    HookStep {
        hook: meta.name.clone(),
        took,
        read_only,
        decided,
        failure,
        advisory: meta.advisory,
        after: ev.clone(),
    }
}

impl Hooks {
    /// Dispatches a meta event to its observers (used by middleware).
    pub(crate) async fn observe<M: Event>(&self, ev: M, ctx: &RunContext) -> Result<(), HookError> {
        observe(self, ev, ctx).await
    }
}

/// How a stretch of synchronous hooks ended.
enum Stretch {
    /// Every hook ran.
    End,
    /// A hook failed and its policy fails the dispatch.
    Failed(HookError),
    /// The next hook is asynchronous.
    Async,
}

/// A hook context the dispatcher re-points at each hook of a chain.
trait Pointed<'a> {
    /// Points it at the hook named `name`.
    fn point_at(&mut self, name: &'a HookName);
    /// The context, to hand to the hook.
    fn get(&self) -> &HookCtx;
}

impl<'a> Pointed<'a> for HookCtx {
    fn point_at(&mut self, name: &'a HookName) {
        self.set_hook(name);
    }
    fn get(&self) -> &HookCtx {
        self
    }
}

impl<'a> Pointed<'a> for LentHookCtx<'a> {
    fn point_at(&mut self, name: &'a HookName) {
        LentHookCtx::point_at(self, name);
    }
    fn get(&self) -> &HookCtx {
        LentHookCtx::get(self)
    }
}

/// Runs synchronous hooks from position `*i` until an asynchronous one, a failure or the end,
/// noting in `by` the hook whose decision stands. Used when no meta-event observer is registered.
/// It only re-points `ctx` at each hook and lends it to them.
fn run_sync_stretch<'a, E: Event>(
    list: &'a [Entry<E>],
    reverse: bool,
    i: &mut usize,
    ev: &mut E,
    ctx: &mut impl Pointed<'a>,
    by: &mut Option<HookName>,
) -> Stretch {
    let n = list.len();
    let at = |k: usize| &list[if reverse { n - 1 - k } else { k }];
    loop {
        // The event as it was before the advisory hook now running, if it is one and may change
        // it.
        let mut backup: Option<E> = None;
        // One unwind guard for the whole stretch (not one per hook): a panic is charged to the
        // hook at `*i - 1`, the one that was running.
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
            while *i < n {
                let entry = at(*i);
                let Handler::Sync(handler) = &entry.handler else {
                    return Stretch::Async;
                };
                *i += 1;
                let meta = &*entry.meta;
                ctx.point_at(&meta.name);
                // After a forward event's decision, the rest of the chain sees it read-only.
                let read_only = !reverse && by.is_some();
                let mut view;
                let target = if read_only {
                    view = ev.clone();
                    &mut view
                } else {
                    if meta.advisory {
                        backup = Some(ev.clone());
                    }
                    &mut *ev
                };
                let marks = target.marks();
                if let Err(e) = handler.handle(target, ctx.get()) {
                    let err = HookError {
                        hook: meta.name.to_string(),
                        event: E::KIND,
                        failure: HookFailure::Error(e.to_string()),
                    };
                    if !meta.advisory {
                        return Stretch::Failed(err);
                    }
                    advisory_failed(&err, ctx.get());
                    if let Some(before) = backup.take() {
                        *ev = before;
                    }
                    continue;
                }
                backup = None;
                if !read_only {
                    note_decision(ev, marks, &meta.name, by);
                }
            }
            Stretch::End
        }));
        match ran {
            Ok(stretch) => return stretch,
            Err(panic) => {
                let meta = &at(*i - 1).meta;
                let err = HookError {
                    hook: meta.name.to_string(),
                    event: E::KIND,
                    failure: HookFailure::Panic(panic_message(panic)),
                };
                if !meta.advisory {
                    return Stretch::Failed(err);
                }
                advisory_failed(&err, ctx.get());
                if let Some(before) = backup.take() {
                    *ev = before;
                }
            }
        }
    }
}

/// Logs an advisory hook's failure (its message masked by the run's redactor).
fn advisory_failed(err: &HookError, run: &RunContext) {
    let error = err.failure.to_string();
    let error = run.redact(&error);
    tracing::warn!(hook = %err.hook, event = %err.event, %error, "advisory hook failed; the run goes on");
}

/// Dispatches a meta event to its observers, without meta events of its own.
async fn observe<M: Event>(hooks: &Hooks, ev: M, run: &RunContext) -> Result<(), HookError> {
    let list = M::list(hooks.lists());
    if !list.is_empty() {
        let mut slot = Some(ev);
        Box::pin(run_chain(list, &mut slot, run, None, None)).await?;
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

/// Runs one hook's future, putting the event it returns in `out`, and turning an error, a panic
/// (while making or polling its future) and a timeout alike into a [`HookFailure`]. The future is
/// made by the caller and pinned where it was made, so its inline storage is never copied: a hook
/// that completes at once costs no allocation, and no timer.
fn invoke<'p, E, F: Future<Output = HookResult<E>>>(
    hook: Pin<&'p mut F>,
    out: Option<&'p mut Option<E>>,
    ctx: &HookCtx,
    timeout: Option<Duration>,
) -> Invoke<'p, E, F> {
    // A hook without a timeout of its own gets the run's default: no hook waits forever.
    let (limit, own) = match timeout {
        Some(limit) => (limit, true),
        None => (ctx.hook_timeout(), false),
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
struct Invoke<'p, E, F> {
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
