//! The `Hook` trait: a type that handles several events (a plugin).

use super::future::HookFuture;
use super::middleware::{
    AroundEntry, HandlesAround, ModelOutcome, Next, ToolCallRequest, ToolOutcome,
};
use super::registry::{
    Entry, Handler, Handles, HookMeta, HookRegistration, Install, IntoHook, Lists,
};
use super::{Events, HookCtx, HookResult, events::*};
use crate::ModelRequest;
use futures::future::BoxFuture;
use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

macro_rules! define_hook_trait {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        /// A hook that handles several events: a plugin.
        ///
        /// Declare the events you handle in [`wants`](Hook::wants) — the others cost nothing — and
        /// override their methods. Each method receives the event and returns it, possibly changed.
        ///
        /// ```
        /// use agentry_core::hooks::{Hook, Events, HookCtx, HookResult, BeforeTool, AfterTool};
        ///
        /// struct Audit;
        /// impl Hook for Audit {
        ///     fn wants(&self) -> Events { Events::BEFORE_TOOL | Events::AFTER_TOOL }
        ///     async fn before_tool(&self, ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        ///         println!("[{}] {} {}", ctx.agent_path(), ev.name(), ev.input);
        ///         Ok(ev)
        ///     }
        ///     async fn after_tool(&self, ev: AfterTool, _ctx: &HookCtx) -> HookResult<AfterTool> {
        ///         println!("-> {}", ev.content);
        ///         Ok(ev)
        ///     }
        /// }
        /// ```
        pub trait Hook: Send + Sync + 'static {
            /// The name errors and meta events use (default: the type's name).
            fn name(&self) -> Cow<'static, str> {
                let full = std::any::type_name::<Self>();
                Cow::Borrowed(full.rsplit("::").next().unwrap_or(full))
            }

            /// The events this hook handles.
            fn wants(&self) -> Events;

            $(
                #[doc = $doc]
                fn $method(&self, ev: $ty, ctx: &HookCtx) -> impl Future<Output = HookResult<$ty>> + Send {
                    let _ = ctx;
                    async move { Ok(ev) }
                }
            )*

            /// Around-model middleware: call `next.run(req)` to go on, or answer without it.
            /// Wanted with [`Events::AROUND_MODEL`].
            fn around_model(&self, req: ModelRequest, next: Next<ModelRequest, ModelOutcome>, ctx: &HookCtx)
                -> impl Future<Output = ModelOutcome> + Send {
                let _ = ctx;
                next.run(req)
            }

            /// Around-tool middleware: call `next.run(call)` to go on, or answer without it.
            /// Wanted with [`Events::AROUND_TOOL`].
            fn around_tool(&self, call: ToolCallRequest, next: Next<ToolCallRequest, ToolOutcome>, ctx: &HookCtx)
                -> impl Future<Output = ToolOutcome> + Send {
                let _ = ctx;
                next.run(call)
            }
        }

        /// Adapts a plugin to the per-event handler lists.
        pub(crate) struct Plugin<H>(pub(crate) H);

        $(
            impl<H: Hook> Handles<$ty> for Plugin<H> {
                #[inline]
                fn handle<'a>(&'a self, ev: $ty, ctx: &'a HookCtx) -> HookFuture<'a, $ty> {
                    HookFuture::call(|| self.0.$method(ev, ctx))
                }
            }
        )*

        impl<H: Hook> HandlesAround<ModelRequest, ModelOutcome> for Plugin<H> {
            fn around<'a>(&'a self, req: ModelRequest, next: Next<ModelRequest, ModelOutcome>, ctx: &'a HookCtx)
                -> BoxFuture<'a, ModelOutcome> {
                Box::pin(self.0.around_model(req, next, ctx))
            }
        }

        impl<H: Hook> HandlesAround<ToolCallRequest, ToolOutcome> for Plugin<H> {
            fn around<'a>(&'a self, req: ToolCallRequest, next: Next<ToolCallRequest, ToolOutcome>, ctx: &'a HookCtx)
                -> BoxFuture<'a, ToolOutcome> {
                Box::pin(self.0.around_tool(req, next, ctx))
            }
        }

        impl<H: Hook> Install for Plugin<H> {
            fn default_name(&self) -> Cow<'static, str> {
                self.0.name()
            }
            fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists) {
                let wants = self.0.wants();
                let me: Arc<Plugin<H>> = Arc::new(*self);
                $(
                    if wants.contains(Events::$flag) {
                        lists.$method.push(Entry { meta: meta.clone(), handler: Handler::Async(me.clone()) });
                    }
                )*
                if wants.contains(Events::AROUND_MODEL) {
                    lists.around_model.push(AroundEntry { meta: meta.clone(), handler: me.clone() });
                }
                if wants.contains(Events::AROUND_TOOL) {
                    lists.around_tool.push(AroundEntry { meta, handler: me });
                }
            }
        }
    };
}
super::with_events!(define_hook_trait);

impl<H: Hook> IntoHook for H {
    fn into_hook(self) -> HookRegistration {
        HookRegistration::new(Plugin(self))
    }
}
