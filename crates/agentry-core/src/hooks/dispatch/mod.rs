//! Dispatch: runs an event through its hooks in order, applying each hook's policy.

mod chain;
mod invoke;
mod sync;

use super::HookName;
use super::registry::Event;
use super::trace::Traced;
use super::{Events, HookError, Hooks};
use crate::RunContext;
use crate::run::context::LentHookCtx;
use futures::future::{BoxFuture, Either};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use chain::*;
use sync::*;

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
pub(super) fn standing<E: Event>(ev: &E, by: Option<HookName>) -> Option<HookName> {
    if ev.decided() { by } else { None }
}

/// Notes that the hook `name` took the decision that now stands, when it took one: on a forward
/// event only the first decision counts (later hooks see the event read-only); on a reverse event
/// a later (outer) hook's decision replaces an earlier one.
pub(super) fn note_decision<E: Event>(
    ev: &E,
    marks_before: u32,
    name: &HookName,
    by: &mut Option<HookName>,
) {
    if ev.marks() != marks_before && ev.decided() {
        *by = Some(name.clone());
    }
}
