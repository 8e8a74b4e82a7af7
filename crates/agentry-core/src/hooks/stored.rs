//! Hooks that are data: stored with a run's checkpoint, built again when the run resumes.

use super::{BoxError, IntoHook};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A hook that is data (external commands, webhooks): its spec is stored with the checkpoints of
/// a run it is attached to ([`RunOptions::with_stored`](crate::RunOptions::with_stored)), so a run
/// resumed in another process gets it back, built by the runtime that resumes it from the kinds
/// it was told it restores.
///
/// The spec must hold everything needed to build the hook again, and no secret: keep secrets as
/// `${VAR}` templates resolved when the hook runs.
pub trait StoredHook: IntoHook + Sized {
    /// The kind, which names how to build the hook again (e.g. `"agentry-external/command-hooks"`).
    const KIND: &'static str;

    /// The spec.
    fn spec(&self) -> Value;

    /// The hook again, from its spec.
    fn from_spec(spec: &Value) -> Result<Self, BoxError>;
}

/// A stored hook as a checkpoint holds it: its kind and its spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookSpecRecord {
    /// The kind ([`StoredHook::KIND`]).
    pub kind: String,
    /// The spec ([`StoredHook::spec`]).
    pub spec: Value,
}

impl HookSpecRecord {
    /// The record of `hook`.
    pub fn of<H: StoredHook>(hook: &H) -> Self {
        HookSpecRecord {
            kind: H::KIND.to_string(),
            spec: hook.spec(),
        }
    }
}
