//! Hooks from async closures, one event each: `on::before_tool(|ev, ctx| async move { .. })`.

use super::future::{HookFuture, InPlaceFuture};
use super::middleware::{
    AroundEntry, HandlesAround, ModelOutcome, Next, ToolCallRequest, ToolOutcome,
};
use super::registry::{
    Entry, Event, Handles, HookMeta, HookRegistration, Install, IntoHook, Lists,
};
use super::registry::{Handler, HandlesInPlace, HandlesSync};
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

/// What an asynchronous in-place hook is: a function of `(&mut E, &HookCtx)` whose future may
/// borrow both, such as an `async` closure that captures nothing (`async |ev, ctx| { .. }`) or an
/// `async fn`. Implemented for every such function; made use of by [`on_mut`].
pub trait InPlaceFn<'a, E: 'a>: Send + Sync + 'static {
    /// The future of one call.
    type Future: Future<Output = HookResult<()>> + Send + 'a;
    /// Calls the function.
    fn call(&self, ev: &'a mut E, ctx: &'a HookCtx) -> Self::Future;
}

impl<'a, E: 'a, F, Fut> InPlaceFn<'a, E> for F
where
    F: Fn(&'a mut E, &'a HookCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookResult<()>> + Send + 'a,
{
    type Future = Fut;
    #[inline]
    fn call(&self, ev: &'a mut E, ctx: &'a HookCtx) -> Fut {
        self(ev, ctx)
    }
}

/// [`InPlaceFn`] with a state the hook holds, lent to each call: a function of
/// `(&S, &mut E, &HookCtx)`. Made use of by [`on_mut::with`].
pub trait InPlaceWithFn<'a, S: 'a, E: 'a>: Send + Sync + 'static {
    /// The future of one call.
    type Future: Future<Output = HookResult<()>> + Send + 'a;
    /// Calls the function.
    fn call(&self, state: &'a S, ev: &'a mut E, ctx: &'a HookCtx) -> Self::Future;
}

impl<'a, S: 'a, E: 'a, F, Fut> InPlaceWithFn<'a, S, E> for F
where
    F: Fn(&'a S, &'a mut E, &'a HookCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookResult<()>> + Send + 'a,
{
    type Future = Fut;
    #[inline]
    fn call(&self, state: &'a S, ev: &'a mut E, ctx: &'a HookCtx) -> Fut {
        self(state, ev, ctx)
    }
}

/// An asynchronous hook for one event that changes it in place. Made by the functions of
/// [`on_mut`].
pub struct FnInPlaceHook<E, F> {
    f: F,
    _event: PhantomData<fn(E) -> E>,
}

/// A function of `(&S, &mut E, &HookCtx)` and its state: the function of an
/// [`FnInPlaceHook`] made by [`on_mut::with`].
pub(crate) struct WithInPlace<S, F> {
    state: S,
    f: F,
}

/// How an [`FnInPlaceHook`] calls its function (plain, or with a state).
pub trait CallsInPlace<E>: Send + Sync + 'static {
    /// Makes the future of one call.
    fn start<'a>(&'a self, ev: &'a mut E, ctx: &'a HookCtx) -> InPlaceFuture<'a>;
}

/// A plain [`InPlaceFn`].
pub(crate) struct Plain<F>(F);

impl<E, F> CallsInPlace<E> for Plain<F>
where
    E: Send + 'static,
    F: for<'a> InPlaceFn<'a, E>,
{
    #[inline]
    fn start<'a>(&'a self, ev: &'a mut E, ctx: &'a HookCtx) -> InPlaceFuture<'a> {
        InPlaceFuture::call(|| self.0.call(ev, ctx))
    }
}

impl<E, S, F> CallsInPlace<E> for WithInPlace<S, F>
where
    E: Send + 'static,
    S: Send + Sync + 'static,
    F: for<'a> InPlaceWithFn<'a, S, E>,
{
    #[inline]
    fn start<'a>(&'a self, ev: &'a mut E, ctx: &'a HookCtx) -> InPlaceFuture<'a> {
        InPlaceFuture::call(|| self.f.call(&self.state, ev, ctx))
    }
}

impl<E: Event, C: CallsInPlace<E>> HandlesInPlace<E> for FnInPlaceHook<E, C> {
    #[inline]
    fn handle<'a>(&'a self, ev: &'a mut E, ctx: &'a HookCtx) -> InPlaceFuture<'a> {
        self.f.start(ev, ctx)
    }
}

impl<E: Event, C: CallsInPlace<E>> Install for FnInPlaceHook<E, C> {
    fn default_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(E::KIND.name())
    }
    fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists) {
        let handler: Arc<dyn HandlesInPlace<E>> = Arc::new(*self);
        E::list_mut(lists).push(Entry {
            meta,
            handler: Handler::InPlace(handler),
        });
    }
}

impl<E: Event, C: CallsInPlace<E>> IntoHook for FnInPlaceHook<E, C> {
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

macro_rules! define_on_mut {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        /// Asynchronous hooks that change the event in place, one function per event:
        /// `async |ev, ctx| { ..; Ok(()) }` gets `&mut` the event and `&` the context, and may
        /// await. Nothing is moved or cloned per call, and nothing is allocated when the call
        /// completes at once: it costs about a third of what an [`on`] hook does.
        ///
        /// The function is an `async` closure that captures nothing, or an `async fn`; state
        /// goes in [`with`](on_mut::with), which lends it to each call. (A closure that captures is refused
        /// by the compiler: "async closure does not implement `Fn` because it captures state
        /// from its environment"; [`on`]'s hooks take the event by value and may capture.)
        ///
        /// ```
        /// use agentry_core::hooks::{on_mut, BeforeTool, HookCtx, HookResult, Hooks};
        /// use std::sync::atomic::{AtomicU64, Ordering};
        ///
        /// async fn no_atlantis(ev: &mut BeforeTool, _ctx: &HookCtx) -> HookResult<()> {
        ///     if ev.input["city"] == "Atlantis" {
        ///         ev.block("Atlantis is not on any map");
        ///     }
        ///     Ok(())
        /// }
        ///
        /// let mut hooks = Hooks::new();
        /// hooks.add(on_mut::before_tool(no_atlantis));
        /// hooks.add(on_mut::before_tool(async |ev, ctx| {
        ///     tracing::info!(tool = ev.name(), run = ctx.run_id(), "calling");
        ///     Ok(())
        /// }));
        /// hooks.add(on_mut::with(AtomicU64::new(0)).after_tool(async |calls, _ev, _ctx| {
        ///     calls.fetch_add(1, Ordering::Relaxed);
        ///     Ok(())
        /// }));
        /// ```
        pub mod on_mut {
            use super::*;
            use crate::hooks::events::*;
            $(
                #[doc = $doc]
                pub fn $method<F>(f: F) -> FnInPlaceHook<$ty, impl CallsInPlace<$ty>>
                where
                    F: for<'a> InPlaceFn<'a, $ty> + AsyncFn(&mut $ty, &HookCtx) -> HookResult<()>,
                {
                    FnInPlaceHook { f: Plain(f), _event: PhantomData }
                }
            )*

            /// Hooks that hold `state` and lend it to each call: `async |state, ev, ctx| { .. }`
            /// gets `&state` first.
            pub fn with<S: Send + Sync + 'static>(state: S) -> WithStateInPlace<S> {
                WithStateInPlace { state }
            }

            /// In-place hooks that hold a state: made by [`with`].
            #[derive(Clone, Debug)]
            pub struct WithStateInPlace<S> {
                state: S,
            }

            impl<S: Send + Sync + 'static> WithStateInPlace<S> {
                $(
                    #[doc = $doc]
                    #[doc = ""]
                    #[doc = "The function gets the state first."]
                    pub fn $method<F>(self, f: F) -> FnInPlaceHook<$ty, impl CallsInPlace<$ty>>
                    where
                        F: for<'a> InPlaceWithFn<'a, S, $ty>
                            + AsyncFn(&S, &mut $ty, &HookCtx) -> HookResult<()>,
                    {
                        FnInPlaceHook {
                            f: WithInPlace { state: self.state, f },
                            _event: PhantomData,
                        }
                    }
                )*
            }
        }
    };
}
super::with_events!(define_on_mut);
