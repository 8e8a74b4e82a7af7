//! Hooks from async closures, one event each: `on::before_tool(|ev, ctx| async move { .. })`.

use super::future::HookFuture;
use super::middleware::{
    AroundEntry, HandlesAround, ModelOutcome, Next, ToolCallRequest, ToolOutcome,
};
use super::registry::{
    Entry, Event, Handles, HookMeta, HookRegistration, Install, IntoHook, Lists,
};
use super::registry::{Handler, HandlesSync};
use super::{HookCtx, HookResult};
use crate::ModelRequest;
use futures::future::BoxFuture;
use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// A hook for one event made from an async closure. Made by the functions of [`on`].
pub struct FnHook<E, F> {
    f: F,
    _event: PhantomData<fn(E) -> E>,
}

impl<E, F> FnHook<E, F> {
    /// Wraps a closure.
    pub fn new(f: F) -> Self {
        FnHook {
            f,
            _event: PhantomData,
        }
    }
}

impl<E, F, Fut> Handles<E> for FnHook<E, F>
where
    E: Event,
    F: Fn(E, HookCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookResult<E>> + Send + 'static,
{
    #[inline]
    fn handle<'a>(&'a self, ev: E, ctx: &'a HookCtx) -> HookFuture<'a, E> {
        HookFuture::call(|| (self.f)(ev, ctx.clone()))
    }
}

impl<E, F, Fut> Install for FnHook<E, F>
where
    E: Event,
    F: Fn(E, HookCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookResult<E>> + Send + 'static,
{
    fn default_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(E::KIND.name())
    }
    fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists) {
        let handler: Arc<dyn Handles<E>> = Arc::new(*self);
        E::list_mut(lists).push(Entry {
            meta,
            handler: Handler::Async(handler),
        });
    }
}

impl<E, F, Fut> IntoHook for FnHook<E, F>
where
    E: Event,
    F: Fn(E, HookCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookResult<E>> + Send + 'static,
{
    fn into_hook(self) -> HookRegistration {
        HookRegistration::new(self)
    }
}

/// A synchronous hook for one event made from a closure `|ev: &mut E, ctx: &HookCtx| -> HookResult<()>`.
/// Made by the functions of [`on_sync`]. It runs inline: no future, no allocation, no clone of
/// the context — the cheapest hook there is, for guards and observers that do not await.
/// (A timeout does not apply to it: it must not block.)
pub struct FnSyncHook<E, F> {
    f: F,
    _event: PhantomData<fn(E) -> E>,
}

impl<E, F> FnSyncHook<E, F> {
    /// Wraps a closure.
    pub fn new(f: F) -> Self {
        FnSyncHook {
            f,
            _event: PhantomData,
        }
    }
}

impl<E, F> HandlesSync<E> for FnSyncHook<E, F>
where
    E: Event,
    F: Fn(&mut E, &HookCtx) -> HookResult<()> + Send + Sync + 'static,
{
    fn handle(&self, ev: &mut E, ctx: &HookCtx) -> HookResult<()> {
        (self.f)(ev, ctx)
    }
}

impl<E, F> Install for FnSyncHook<E, F>
where
    E: Event,
    F: Fn(&mut E, &HookCtx) -> HookResult<()> + Send + Sync + 'static,
{
    fn default_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(E::KIND.name())
    }
    fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists) {
        let handler: Arc<dyn HandlesSync<E>> = Arc::new(*self);
        E::list_mut(lists).push(Entry {
            meta,
            handler: Handler::Sync(handler),
        });
    }
}

impl<E, F> IntoHook for FnSyncHook<E, F>
where
    E: Event,
    F: Fn(&mut E, &HookCtx) -> HookResult<()> + Send + Sync + 'static,
{
    fn into_hook(self) -> HookRegistration {
        HookRegistration::new(self)
    }
}

/// Around middleware made from an async closure `|req, next| async move { next.run(req).await }`.
pub struct FnAround<Req, Out, F> {
    f: F,
    _types: PhantomData<fn(Req) -> Out>,
}

impl<Req, Out, F, Fut> HandlesAround<Req, Out> for FnAround<Req, Out, F>
where
    Req: Send + 'static,
    Out: Send + 'static,
    F: Fn(Req, Next<Req, Out>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Out> + Send + 'static,
{
    fn around<'a>(
        &'a self,
        req: Req,
        next: Next<Req, Out>,
        _ctx: &'a HookCtx,
    ) -> BoxFuture<'a, Out> {
        Box::pin((self.f)(req, next))
    }
}

macro_rules! around_install {
    ($req:ty, $out:ty, $list:ident, $name:literal) => {
        impl<F, Fut> Install for FnAround<$req, $out, F>
        where
            F: Fn($req, Next<$req, $out>) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = $out> + Send + 'static,
        {
            fn default_name(&self) -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists) {
                let handler: Arc<dyn HandlesAround<$req, $out>> = Arc::new(*self);
                lists.$list.push(AroundEntry { meta, handler });
            }
        }

        impl<F, Fut> IntoHook for FnAround<$req, $out, F>
        where
            F: Fn($req, Next<$req, $out>) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = $out> + Send + 'static,
        {
            fn into_hook(self) -> HookRegistration {
                HookRegistration::new(self)
            }
        }
    };
}
around_install!(ModelRequest, ModelOutcome, around_model, "AroundModel");
around_install!(ToolCallRequest, ToolOutcome, around_tool, "AroundTool");

macro_rules! define_on {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        /// Closure hooks, one function per event.
        ///
        /// ```
        /// use agentry_core::hooks::{on, Hooks};
        /// let mut hooks = Hooks::new();
        /// hooks.add(on::before_tool(|mut ev, _ctx| async move {
        ///     if ev.input["city"] == "Atlantis" { ev.block("Atlantis is not on any map"); }
        ///     Ok(ev)
        /// }));
        /// ```
        pub mod on {
            use super::*;
            use crate::hooks::events::*;
            $(
                #[doc = $doc]
                pub fn $method<F, Fut>(f: F) -> FnHook<$ty, F>
                where
                    F: Fn($ty, HookCtx) -> Fut + Send + Sync + 'static,
                    Fut: Future<Output = HookResult<$ty>> + Send + 'static,
                {
                    FnHook::new(f)
                }
            )*

            /// Hooks that share `state`, taken once: each call of the hook gets a clone of it
            /// (cheap for an `Arc`), so the closure needs no clone of its own before its
            /// `async move` block.
            ///
            /// ```
            /// use agentry_core::hooks::{on, Hooks};
            /// use std::sync::{Arc, Mutex};
            ///
            /// let seen = Arc::new(Mutex::new(Vec::<String>::new()));
            /// let mut hooks = Hooks::new();
            /// hooks.add(on::with(seen.clone()).before_tool(|seen, ev, _ctx| async move {
            ///     seen.lock().unwrap().push(ev.name().to_string());
            ///     Ok(ev)
            /// }));
            /// ```
            pub fn with<S: Clone + Send + Sync + 'static>(state: S) -> WithState<S> {
                WithState { state }
            }

            /// Closure hooks that share a state: made by [`with`].
            #[derive(Clone, Debug)]
            pub struct WithState<S> {
                state: S,
            }

            impl<S: Clone + Send + Sync + 'static> WithState<S> {
                $(
                    #[doc = $doc]
                    #[doc = ""]
                    #[doc = "The closure gets a clone of the shared state first."]
                    pub fn $method<F, Fut>(
                        self,
                        f: F,
                    ) -> FnHook<$ty, impl Fn($ty, HookCtx) -> Fut + Send + Sync + 'static>
                    where
                        F: Fn(S, $ty, HookCtx) -> Fut + Send + Sync + 'static,
                        Fut: Future<Output = HookResult<$ty>> + Send + 'static,
                    {
                        let state = self.state;
                        FnHook::new(move |ev: $ty, ctx: HookCtx| f(state.clone(), ev, ctx))
                    }
                )*
            }

            /// Around-model middleware: `|req, next| async move { next.run(req).await }`.
            pub fn around_model<F, Fut>(f: F) -> FnAround<ModelRequest, ModelOutcome, F>
            where
                F: Fn(ModelRequest, Next<ModelRequest, ModelOutcome>) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = ModelOutcome> + Send + 'static,
            {
                FnAround { f, _types: PhantomData }
            }

            /// Around-tool middleware: `|call, next| async move { next.run(call).await }`.
            pub fn around_tool<F, Fut>(f: F) -> FnAround<ToolCallRequest, ToolOutcome, F>
            where
                F: Fn(ToolCallRequest, Next<ToolCallRequest, ToolOutcome>) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = ToolOutcome> + Send + 'static,
            {
                FnAround { f, _types: PhantomData }
            }
        }
    };
}
super::with_events!(define_on);

macro_rules! define_on_sync {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        /// Synchronous closure hooks, one function per event: `|ev, ctx| { ..; Ok(()) }` changes
        /// the event in place. They cost no allocation; use them for guards and observers that
        /// do not need to await.
        ///
        /// ```
        /// use agentry_core::hooks::{on_sync, Hooks};
        /// let mut hooks = Hooks::new();
        /// hooks.add(on_sync::before_tool(|ev, _ctx| {
        ///     if ev.name() == "rm" { ev.block("not here"); }
        ///     Ok(())
        /// }));
        /// ```
        pub mod on_sync {
            use super::*;
            use crate::hooks::events::*;
            $(
                #[doc = $doc]
                pub fn $method<F>(f: F) -> FnSyncHook<$ty, F>
                where
                    F: Fn(&mut $ty, &HookCtx) -> HookResult<()> + Send + Sync + 'static,
                {
                    FnSyncHook { f, _event: PhantomData }
                }
            )*
        }
    };
}
super::with_events!(define_on_sync);
