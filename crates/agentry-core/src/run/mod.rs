//! One run as hooks and tools see it: its context, the events it streams (and the names of the
//! hook events and hooks they report), approvals, stop reasons and its output.
//!
//! This is the layer below the hook engine ([`crate::hooks`]), which hands these to hooks, and
//! below the agent definition and the step machine ([`crate::agent`], [`crate::machine`]), which
//! drive a run: nothing here imports them.

pub mod approval;
pub mod context;
mod event_kind;
pub mod events;
mod hook_name;
pub mod output;
pub mod recorded;
pub mod stop;

pub use event_kind::{EventKind, Events};
pub use hook_name::HookName;
