//! Stretches of synchronous hooks: run in place on a lent context, without a future.

use crate::describe::panic_message;
use crate::hooks::HookName;
use crate::hooks::registry::{Entry, Event, Handler, HandlesSync};
use crate::hooks::{HookCtx, HookError, HookFailure};
use crate::run::context::LentHookCtx;
use std::panic::AssertUnwindSafe;

use super::chain::*;
use super::note_decision;

/// How a stretch of synchronous hooks ended.
pub(super) enum Stretch {
    /// Every hook ran.
    End,
    /// A hook failed and its policy fails the dispatch.
    Failed(HookError),
    /// The next hook is asynchronous.
    Async,
}

/// A hook context the dispatcher re-points at each hook of a chain.
pub(super) trait Pointed<'a> {
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
pub(super) fn run_sync_stretch<'a, E: Event>(
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
                // After a forward event's final decision, the rest of the chain sees it
                // read-only.
                let read_only = !reverse && by.is_some() && ev.closed();
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
                    advisory_failed(&err, ctx.get().run());
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
                advisory_failed(&err, ctx.get().run());
                if let Some(before) = backup.take() {
                    *ev = before;
                }
            }
        }
    }
}

/// Calls one synchronous hook in place, turning an error and a panic into a [`HookFailure`].
pub(super) fn invoke_sync<E: Event>(
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
