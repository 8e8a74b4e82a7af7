//! What a hook receives besides its event.

use super::shortcuts::run_shortcuts;
use super::{RunContext, RunContextSpec};
use crate::run::HookName;
use crate::state::{StateError, StateSource};

/// What a hook receives besides its event: the run ([`run`](Self::run)) plus the hook's own name.
///
/// The run's everyday methods (ids, agent, step, session, tags, metadata, cancellation, state,
/// custom events, redaction) are repeated here; `update_state` here records the hook as the
/// source.
#[derive(Clone, Debug)]
pub struct HookCtx {
    run: RunContext,
    hook: HookName,
}

impl HookCtx {
    /// A hook context (the hook engine creates these).
    pub fn new(run: RunContext, hook: HookName) -> Self {
        HookCtx { run, hook }
    }

    /// The context of hook `hook` in a run no runtime drives, for testing a hook on its own:
    /// see [`RunContext::detached`].
    ///
    /// ```
    /// use agentry_core::{HookCtx, RunContextSpec};
    /// let ctx = HookCtx::detached(RunContextSpec::new("r-1", "planner"), "audit");
    /// assert_eq!((ctx.run_id(), ctx.hook_name()), ("r-1", "audit"));
    /// ```
    pub fn detached(spec: RunContextSpec, hook: impl Into<HookName>) -> Self {
        HookCtx::new(RunContext::detached(spec), hook.into())
    }

    run_shortcuts!();
    /// Points the context at another hook (the dispatcher reuses one context per event).
    #[inline]
    pub(crate) fn set_hook(&mut self, hook: &HookName) {
        if !self.hook.same_as(hook) {
            self.hook = hook.clone();
        }
    }
    /// The name of the hook this context was made for.
    pub fn hook_name(&self) -> &str {
        &self.hook
    }
    /// The run's context.
    pub fn run(&self) -> &RunContext {
        &self.run
    }
    /// Updates the state; StateChange reports this hook as the source.
    pub fn update_state<S: 'static, R>(
        &self,
        update: impl FnOnce(&mut S) -> R,
    ) -> Result<R, StateError> {
        self.run
            .update_state_as(|| StateSource::Hook(self.hook.to_string()), update)
    }
}

/// A hook context that borrows its run's context and its hooks' names instead of counting
/// references to them, for synchronous dispatch: on this path the context cannot outlive the
/// call, and an atomic increment and decrement per event, and per hook, is a measurable part of
/// a no-op hook's cost.
pub(crate) struct LentHookCtx<'a> {
    ctx: std::mem::ManuallyDrop<HookCtx>,
    _lent: std::marker::PhantomData<&'a RunContext>,
}

impl<'a> LentHookCtx<'a> {
    pub(crate) fn new(run: &'a RunContext, hook: &'a HookName) -> Self {
        // SAFETY: these copy the `Arc` pointers inside `run` and `hook` without incrementing
        // their counts. The copies live no longer than `'a`, during which the originals keep
        // the allocations alive, and they are never dropped (they sit in a `ManuallyDrop`), so
        // the counts are never decremented either. Hooks get `&HookCtx` and can only clone it,
        // which takes counted references of its own.
        let (run, hook) = unsafe { (std::ptr::read(run), std::ptr::read(hook)) };
        LentHookCtx {
            ctx: std::mem::ManuallyDrop::new(HookCtx { run, hook }),
            _lent: std::marker::PhantomData,
        }
    }

    /// Points the context at another hook, lent the same way as in [`new`](Self::new).
    #[inline]
    pub(crate) fn point_at(&mut self, hook: &'a HookName) {
        // SAFETY: the name replaced is itself an uncounted copy, so not dropping it is right;
        // the new one is copied without counting, as in `new`, and outlived by `hook`.
        unsafe { std::ptr::write(&mut self.ctx.hook, std::ptr::read(hook)) }
    }

    /// The context, to hand to a hook.
    pub(crate) fn get(&self) -> &HookCtx {
        &self.ctx
    }
}
