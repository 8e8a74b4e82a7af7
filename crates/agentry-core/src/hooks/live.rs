//! Hooks registered while a runtime runs, and unregistered through the handle registration
//! returns: each run takes the set as it is when the run starts, so a change never reaches a run
//! (or an event) under way.

use super::{Events, Hooks, IntoHook};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, Weak};
use tokio::sync::broadcast;

/// A change to a [`LiveHooks`] registry, for whoever watches it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryEvent {
    /// A hook was registered.
    HookRegistered {
        /// Its name.
        name: String,
        /// The events it handles.
        events: Events,
    },
    /// A hook was unregistered.
    HookUnregistered {
        /// Its name.
        name: String,
    },
}

struct Registered {
    id: u64,
    name: String,
    hooks: Hooks,
}

#[derive(Default)]
struct State {
    next_id: u64,
    registered: Vec<Registered>,
    merged: Arc<Hooks>,
}

/// A registry of hooks that can change while runs go on: `register` returns a [`HookHandle`]
/// that unregisters the hook; [`snapshot`](Self::snapshot) is what a run starting now sees.
pub struct LiveHooks {
    state: RwLock<State>,
    any: AtomicBool,
    events: broadcast::Sender<RegistryEvent>,
}

impl std::fmt::Debug for LiveHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveHooks")
            .field("registered", &self.len())
            .finish()
    }
}

impl Default for LiveHooks {
    fn default() -> Self {
        LiveHooks {
            state: RwLock::default(),
            any: AtomicBool::new(false),
            events: broadcast::channel(64).0,
        }
    }
}

impl LiveHooks {
    /// An empty registry.
    pub fn new() -> Arc<LiveHooks> {
        Arc::new(LiveHooks::default())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `hook` for the runs that start from now on.
    pub fn register(self: &Arc<Self>, hook: impl IntoHook) -> HookHandle {
        let registration = hook.into_hook();
        let name = registration.name().into_owned();
        let mut hooks = Hooks::new();
        hooks.add(registration);
        let events = hooks.wanted();
        let id = {
            let mut state = self.write();
            state.next_id += 1;
            let id = state.next_id;
            state.registered.push(Registered {
                id,
                name: name.clone(),
                hooks,
            });
            Self::remerge(&mut state);
            self.any.store(true, Ordering::Release);
            id
        };
        tracing::info!(hook = %name, "hook registered");
        let _ = self.events.send(RegistryEvent::HookRegistered {
            name: name.clone(),
            events,
        });
        HookHandle {
            id,
            name,
            live: Arc::downgrade(self),
        }
    }

    /// Puts `hook` in place of the registration `id`, in one step: no run sees both or neither.
    fn replace(self: &Arc<Self>, id: u64, hook: impl IntoHook) -> HookHandle {
        let registration = hook.into_hook();
        let name = registration.name().into_owned();
        let mut hooks = Hooks::new();
        hooks.add(registration);
        let events = hooks.wanted();
        let (new_id, old) = {
            let mut state = self.write();
            state.next_id += 1;
            let new_id = state.next_id;
            let entry = Registered {
                id: new_id,
                name: name.clone(),
                hooks,
            };
            let old = match state.registered.iter().position(|r| r.id == id) {
                Some(at) => Some(std::mem::replace(&mut state.registered[at], entry).name),
                None => {
                    state.registered.push(entry);
                    None
                }
            };
            Self::remerge(&mut state);
            self.any.store(true, Ordering::Release);
            (new_id, old)
        };
        if let Some(old) = old {
            tracing::info!(hook = %old, "hook unregistered");
            let _ = self
                .events
                .send(RegistryEvent::HookUnregistered { name: old });
        }
        tracing::info!(hook = %name, "hook registered");
        let _ = self.events.send(RegistryEvent::HookRegistered {
            name: name.clone(),
            events,
        });
        HookHandle {
            id: new_id,
            name,
            live: Arc::downgrade(self),
        }
    }

    /// Unregisters the hook `handle` registered; false when it was gone already.
    fn unregister(&self, id: u64) -> Option<String> {
        let name = {
            let mut state = self.write();
            let at = state.registered.iter().position(|r| r.id == id)?;
            let gone = state.registered.remove(at);
            Self::remerge(&mut state);
            self.any
                .store(!state.registered.is_empty(), Ordering::Release);
            gone.name
        };
        tracing::info!(hook = %name, "hook unregistered");
        let _ = self
            .events
            .send(RegistryEvent::HookUnregistered { name: name.clone() });
        Some(name)
    }

    fn remerge(state: &mut State) {
        let parts: Vec<&Hooks> = state.registered.iter().map(|r| &r.hooks).collect();
        state.merged = Arc::new(Hooks::merge(&parts));
    }

    /// The hooks registered now, merged: what a run starting now gets. Costs one atomic load
    /// when nothing is registered.
    pub fn snapshot(&self) -> Option<Arc<Hooks>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        Some(state.merged.clone())
    }

    /// How many hooks are registered.
    pub fn len(&self) -> usize {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .registered
            .len()
    }

    /// True when no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registry changes from now on (HookRegistered, HookUnregistered).
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryEvent> {
        self.events.subscribe()
    }
}

/// A hook registered on a [`LiveHooks`] registry (on a running runtime): unregister it with
/// [`unregister`](Self::unregister). Dropping the handle leaves the hook registered.
#[derive(Debug)]
pub struct HookHandle {
    id: u64,
    name: String,
    live: Weak<LiveHooks>,
}

impl HookHandle {
    /// The hook's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers `hook` in place of this one, in one step (no run starts with both, or with
    /// neither): how a settings file that changed is reloaded. Returns the new hook's handle; when
    /// the registry is gone, the hook is not registered and the handle unregisters nothing.
    pub fn replace(self, hook: impl IntoHook) -> HookHandle {
        match self.live.upgrade() {
            Some(live) => live.replace(self.id, hook),
            None => self,
        }
    }

    /// Unregisters the hook: runs that start from now on do not see it (runs under way keep the
    /// hooks they started with). False when it was unregistered already or its registry is gone.
    pub fn unregister(self) -> bool {
        self.live
            .upgrade()
            .is_some_and(|live| live.unregister(self.id).is_some())
    }
}
