//! The chain of an event with asynchronous hooks: each hook in turn, in order, with its
//! policy; meta events around each hook when observed; the in-place form.

use crate::RunContext;
use crate::hooks::HookName;
use crate::hooks::events::Decides;
use crate::hooks::registry::{Entry, Event, Handler};
use crate::hooks::trace::HookStep;
use crate::hooks::{HookError, HookFailed, HookFinished, HookStarted, Hooks};
use crate::run::context::LentHookCtx;

use super::invoke::*;
use super::sync::*;
use super::{note_decision, standing};
use std::time::{Duration, Instant};

pub(super) async fn run_chain<E: Event>(
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
        let read_only = !reverse && by.is_some() && slot.as_ref().is_some_and(Decides::closed);
        // Boxed, as the traced copy and the read-only views that are awaited: kept inline, the
        // copies would grow the future of every dispatch.
        let backup = if meta.advisory && !read_only {
            slot.clone().map(Box::new)
        } else {
            None
        };
        let marks = slot.as_ref().map_or(0, Decides::marks);
        // Observers of HookFinished hear what the hook changed: the event as it got it is
        // kept to compare (only then; a read-only copy's changes are dropped anyway).
        let unchanged = match observers {
            Some(obs) if !read_only && !HookFinished::list(obs.lists()).is_empty() => {
                slot.clone().map(Box::new)
            }
            _ => None,
        };
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
                    let mut done = HookFinished::new(meta.name.clone(), E::KIND, took);
                    if let (Some(before), Some(now)) = (unchanged.as_deref(), slot.as_ref()) {
                        let mut changed = now.changed_since(before);
                        if now.marks() != marks {
                            changed.push("decision".to_owned());
                        }
                        done = done.with_changes(changed);
                    }
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
pub(super) async fn run_chain_in_place<E: Event>(
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
        let read_only = !reverse && by.is_some() && ev.closed();
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
pub(super) fn step<E: Clone>(
    meta: &crate::hooks::registry::HookMeta,
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

/// Logs an advisory hook's failure (its message masked by the run's redactor).
pub(super) fn advisory_failed(err: &HookError, run: &RunContext) {
    let error = err.failure.to_string();
    let error = run.redact(&error);
    tracing::warn!(hook = %err.hook, event = %err.event, %error, "advisory hook failed; the run goes on");
    run.stream_hook_failure(&err.hook, err.event, &error);
}

/// Dispatches a meta event to its observers, without meta events of its own.
pub(super) async fn observe<M: Event>(
    hooks: &Hooks,
    ev: M,
    run: &RunContext,
) -> Result<(), HookError> {
    let list = M::list(hooks.lists());
    if !list.is_empty() {
        let mut slot = Some(ev);
        Box::pin(run_chain(list, &mut slot, run, None, None)).await?;
    }
    Ok(())
}
