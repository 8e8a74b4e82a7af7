//! Registration: hooks with a name, priority, failure policy and timeout, kept per event in
//! priority order, and merged across scopes.

use super::future::{HookFuture, InPlaceFuture};
use super::middleware::{AroundEntry, ModelOutcome, ToolCallRequest, ToolOutcome};
use super::{EventKind, Events, HookCtx, HookName, HookResult, events::*};
use crate::ModelRequest;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// How a registered hook is run: its name, priority, failure policy and timeout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookMeta {
    /// The name errors and meta events use.
    pub name: HookName,
    /// Higher runs first (default 0; guards use 200 and up).
    pub priority: i32,
    /// When true, a failure is logged and reported as HookFailed, and the run goes on.
    pub advisory: bool,
    /// The longest the hook may take per event; `None` for no limit.
    pub timeout: Option<Duration>,
}

/// Handles one event type. Implemented by closure hooks and by plugins (through [`super::Hook`]);
/// users do not implement it directly.
pub trait Handles<E>: Send + Sync {
    /// Handles the event. The future is held inline (see [`HookFuture`]): a call that fits
    /// allocates nothing. A panic while making the future is caught and reported by the future
    /// ([`HookFuture::call`] does both).
    fn handle<'a>(&'a self, ev: E, ctx: &'a HookCtx) -> HookFuture<'a, E>;
}

/// Handles one event type synchronously, in place: no future, no allocation. Implemented by
/// the closure hooks of [`on_sync`](super::on_sync).
pub trait HandlesSync<E>: Send + Sync {
    /// Handles the event.
    fn handle(&self, ev: &mut E, ctx: &HookCtx) -> HookResult<()>;
}

/// Handles one event type asynchronously, in place: the future borrows the event and the context
/// (no move of the event, no clone of the context). Implemented by the closure hooks of
/// [`on_mut`](super::on_mut).
pub trait HandlesInPlace<E>: Send + Sync {
    /// Handles the event. The future is held inline, as [`Handles::handle`]'s is, in less room.
    fn handle<'a>(&'a self, ev: &'a mut E, ctx: &'a HookCtx) -> InPlaceFuture<'a>;
}

/// A registered handler: asynchronous (closures of [`on`](super::on), plugins), synchronous
/// (closures of [`on_sync`](super::on_sync)) or asynchronous in place (closures of
/// [`on_mut`](super::on_mut)).
pub enum Handler<E> {
    /// Returns a future.
    Async(Arc<dyn Handles<E>>),
    /// Runs inline.
    Sync(Arc<dyn HandlesSync<E>>),
    /// Returns a future that changes the event in place.
    InPlace(Arc<dyn HandlesInPlace<E>>),
}

impl<E> Clone for Handler<E> {
    fn clone(&self) -> Self {
        match self {
            Handler::Async(h) => Handler::Async(h.clone()),
            Handler::Sync(h) => Handler::Sync(h.clone()),
            Handler::InPlace(h) => Handler::InPlace(h.clone()),
        }
    }
}

/// One registered handler of an event.
pub struct Entry<E> {
    /// How it is run.
    pub meta: Arc<HookMeta>,
    /// The handler.
    pub handler: Handler<E>,
}

impl<E> Clone for Entry<E> {
    fn clone(&self) -> Self {
        Entry {
            meta: self.meta.clone(),
            handler: self.handler.clone(),
        }
    }
}

macro_rules! define_lists {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        /// The handlers of every event, each list in dispatch order.
        #[derive(Clone, Default)]
        pub struct Lists {
            $(pub(crate) $method: Vec<Entry<$ty>>,)*
            pub(crate) around_model: Vec<AroundEntry<ModelRequest, ModelOutcome>>,
            pub(crate) around_tool: Vec<AroundEntry<ToolCallRequest, ToolOutcome>>,
        }

        impl Lists {
            fn append(&mut self, other: &Lists) {
                $(self.$method.extend(other.$method.iter().cloned());)*
                self.around_model.extend(other.around_model.iter().cloned());
                self.around_tool.extend(other.around_tool.iter().cloned());
            }
            fn sort(&mut self) {
                $(self.$method.sort_by_key(|e| std::cmp::Reverse(e.meta.priority));)*
                self.around_model.sort_by_key(|e| std::cmp::Reverse(e.meta.priority));
                self.around_tool.sort_by_key(|e| std::cmp::Reverse(e.meta.priority));
            }
            fn sync_only(&self) -> Events {
                let mut w = Events::empty();
                $(if self.$method.iter().all(|e| matches!(e.handler, Handler::Sync(_))) { w |= Events::$flag; })*
                w
            }
            fn in_place_only(&self) -> Events {
                let mut w = Events::empty();
                $(if self.$method.iter().all(|e| !matches!(e.handler, Handler::Async(_))) { w |= Events::$flag; })*
                w
            }
            fn wanted(&self) -> Events {
                let mut w = Events::empty();
                $(if !self.$method.is_empty() { w |= Events::$flag; })*
                if !self.around_model.is_empty() { w |= Events::AROUND_MODEL; }
                if !self.around_tool.is_empty() { w |= Events::AROUND_TOOL; }
                w
            }
        }

        $(
            impl Event for $ty {
                const KIND: EventKind = EventKind::$ty;
                fn list(lists: &Lists) -> &[Entry<Self>] {
                    &lists.$method
                }
                fn list_mut(lists: &mut Lists) -> &mut Vec<Entry<Self>> {
                    &mut lists.$method
                }
            }
        )*
    };
}
super::with_events!(define_lists);

/// A hook event payload type.
pub trait Event: Decides + crate::hooks::events::Changes + Clone + Send + Sync + 'static {
    /// Which event this is.
    const KIND: EventKind;
    #[doc(hidden)]
    fn list(lists: &Lists) -> &[Entry<Self>];
    #[doc(hidden)]
    fn list_mut(lists: &mut Lists) -> &mut Vec<Entry<Self>>;
}

/// Something that installs handlers into the per-event lists: a closure hook or a plugin.
pub trait Install: Send + Sync + 'static {
    /// The name used when the registration gives none.
    fn default_name(&self) -> Cow<'static, str>;
    /// Adds handlers to `lists` for every event it handles.
    fn install(self: Box<Self>, meta: Arc<HookMeta>, lists: &mut Lists);
}

/// A hook ready to register: what it handles plus how it runs. Made by [`IntoHook`] and tuned by
/// [`HookExt`].
pub struct HookRegistration {
    name: Option<Cow<'static, str>>,
    priority: i32,
    advisory: bool,
    timeout: Option<Duration>,
    install: Box<dyn Install>,
}

impl HookRegistration {
    /// The name the hook will be registered under: the one it was given, else its default.
    pub fn name(&self) -> Cow<'static, str> {
        match &self.name {
            Some(name) => name.clone(),
            None => self.install.default_name(),
        }
    }

    /// A registration with default settings (priority 0, fail-the-run, no timeout).
    pub fn new(install: impl Install) -> Self {
        HookRegistration {
            name: None,
            priority: 0,
            advisory: false,
            timeout: None,
            install: Box::new(install),
        }
    }
}

/// Converts closure hooks, plugins and tuned registrations into a [`HookRegistration`].
pub trait IntoHook {
    /// Converts.
    fn into_hook(self) -> HookRegistration;
}

impl IntoHook for HookRegistration {
    fn into_hook(self) -> HookRegistration {
        self
    }
}

/// Tunes how a hook runs: `.named(..)`, `.priority(..)`, `.advisory()`, `.timeout(..)`.
///
/// ```
/// use agentry_core::hooks::{on, HookExt, Hooks};
/// use std::time::Duration;
/// let mut hooks = Hooks::new();
/// hooks.add(
///     on::before_tool(|ev, _ctx| async move { Ok(ev) })
///         .named("audit")
///         .priority(100)
///         .advisory()
///         .timeout(Duration::from_secs(2)),
/// );
/// assert_eq!(hooks.len(), 1);
/// ```
pub trait HookExt: IntoHook + Sized {
    /// Names the hook (errors and meta events use the name).
    fn named(self, name: impl Into<Cow<'static, str>>) -> HookRegistration {
        let mut r = self.into_hook();
        r.name = Some(name.into());
        r
    }
    /// Sets the priority: higher runs first (default 0; guards use 200 and up).
    fn priority(self, priority: i32) -> HookRegistration {
        let mut r = self.into_hook();
        r.priority = priority;
        r
    }
    /// Makes a failure advisory: logged and reported as HookFailed; the run goes on.
    fn advisory(self) -> HookRegistration {
        let mut r = self.into_hook();
        r.advisory = true;
        r
    }
    /// Limits how long the hook may take per event; overrunning counts as a failure.
    fn timeout(self, timeout: Duration) -> HookRegistration {
        let mut r = self.into_hook();
        r.timeout = Some(timeout);
        r
    }
}

impl<T: IntoHook> HookExt for T {}

/// A set of registered hooks: one scope's (runtime, agent, run), or the merge a run dispatches to.
///
/// Cloning is cheap (handlers are shared).
#[derive(Clone, Default)]
pub struct Hooks {
    lists: Lists,
    wanted: Events,
    sync_only: Events,
    /// The events whose hooks all change the event in place (synchronous or `on_mut`).
    in_place_only: Events,
    count: usize,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("registered", &self.count)
            .field("wanted", &self.wanted)
            .finish()
    }
}

impl Hooks {
    /// An empty set.
    pub fn new() -> Self {
        Hooks::default()
    }

    /// Registers a hook. Among hooks of equal priority, earlier registrations run first.
    pub fn add(&mut self, hook: impl IntoHook) -> &mut Self {
        let reg = hook.into_hook();
        self.count += 1;
        let name = match reg.name {
            Some(n) => n,
            None => reg.install.default_name(),
        };
        let meta = Arc::new(HookMeta {
            name: HookName::from(name),
            priority: reg.priority,
            advisory: reg.advisory,
            timeout: reg.timeout,
        });
        reg.install.install(meta, &mut self.lists);
        self.lists.sort();
        self.wanted = self.lists.wanted();
        self.sync_only = self.lists.sync_only();
        self.in_place_only = self.lists.in_place_only();
        self
    }

    /// Merges scopes into the set one run dispatches to: entries of earlier sets come before
    /// entries of later ones at equal priority.
    pub fn merge(parts: &[&Hooks]) -> Hooks {
        let mut non_empty = parts.iter().filter(|h| h.count > 0);
        let Some(first) = non_empty.next() else {
            return Hooks::default();
        };
        let mut merged = (*first).clone();
        let mut more = false;
        for h in non_empty {
            merged.lists.append(&h.lists);
            merged.count += h.count;
            more = true;
        }
        if more {
            merged.lists.sort();
            merged.wanted = merged.lists.wanted();
            merged.sync_only = merged.lists.sync_only();
            merged.in_place_only = merged.lists.in_place_only();
        }
        merged
    }

    /// True when some hook handles any event of `events`: check this before building a payload.
    #[inline]
    pub fn wants(&self, events: Events) -> bool {
        self.wanted.intersects(events)
    }

    /// True when every hook of these events is synchronous.
    #[inline]
    pub(crate) fn sync_only(&self, events: Events) -> bool {
        self.sync_only.contains(events)
    }

    /// True when every hook of `events` changes the event in place (none takes it by value).
    pub(crate) fn in_place_only(&self, events: Events) -> bool {
        self.in_place_only.contains(events)
    }

    /// The events some hook handles.
    pub fn wanted(&self) -> Events {
        self.wanted
    }

    /// The number of registrations.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The around-model middleware, outermost first.
    pub fn around_model(&self) -> &[AroundEntry<ModelRequest, ModelOutcome>] {
        &self.lists.around_model
    }

    /// The around-tool middleware, outermost first.
    pub fn around_tool(&self) -> &[AroundEntry<ToolCallRequest, ToolOutcome>] {
        &self.lists.around_tool
    }

    pub(crate) fn lists(&self) -> &Lists {
        &self.lists
    }
}
