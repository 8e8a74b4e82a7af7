//! A traced dispatch: what each hook of one event did, for tools that show it (`agentry hooks
//! test`) and for tests.

use super::HookName;
use std::time::Duration;

/// What one hook did to an event in a [traced dispatch](super::Hooks::dispatch_traced).
#[derive(Clone, Debug)]
pub struct HookStep<E> {
    /// The hook's name.
    pub hook: HookName,
    /// How long it took.
    pub took: Duration,
    /// True when the hook ran on a read-only copy: an earlier hook had decided a forward event,
    /// so what this hook did was dropped.
    pub read_only: bool,
    /// True when this hook took the decision that stood once it returned.
    pub decided: bool,
    /// The hook's failure, when it failed: an advisory hook's failure is noted here and the
    /// chain went on with the event as it was before it; any other ends the dispatch.
    pub failure: Option<String>,
    /// True when the hook is advisory.
    pub advisory: bool,
    /// The event as the next hook sees it.
    pub after: E,
}

/// A traced dispatch's outcome: each hook's step in the order they ran, and how the dispatch
/// ended.
#[derive(Debug)]
pub struct Traced<E> {
    /// The hooks' steps, in the order they ran.
    pub steps: Vec<HookStep<E>>,
    /// The event as the last hook left it with the hook whose decision stands, or the error of
    /// the hook that failed the dispatch.
    pub outcome: Result<(E, Option<HookName>), super::HookError>,
}
