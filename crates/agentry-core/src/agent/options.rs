//! Per-run options: identity, tags, metadata and run-scope hooks.

use crate::hooks::{HookSpecRecord, Hooks, IntoHook, StoredHook};
use crate::tool::{StoredToolSource, ToolSource};
use std::sync::Arc;

/// Options of one run.
///
/// ```
/// use agentry_core::RunOptions;
/// let opts = RunOptions::new().session("s-42").user("u-7").tag("beta").metadata("tenant", "acme");
/// assert_eq!(opts.session_id.as_deref(), Some("s-42"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run id to use (a fresh UUID when unset).
    pub run_id: Option<String>,
    /// The conversation this run belongs to.
    pub session_id: Option<String>,
    /// The user the run acts for.
    pub user_id: Option<String>,
    /// Free-form tags, for filtering traces.
    pub tags: Vec<String>,
    /// Free-form metadata, visible to hooks.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Hooks that apply to this run only.
    pub hooks: Hooks,
    /// The specs of this run's hooks and tool sources that are data
    /// ([`with_stored`](Self::with_stored), [`with_stored_tools`](Self::with_stored_tools)):
    /// stored with its checkpoints, built again when it resumes.
    pub stored_hooks: Vec<HookSpecRecord>,
    /// Sources of tools this run has besides its agent's ([`with_tools`](Self::with_tools)).
    pub tool_sources: Vec<Arc<dyn ToolSource>>,
    /// Compact the history before the first model turn, whatever its size
    /// ([`compact_first`](Self::compact_first)).
    pub compact_first: bool,
}

impl RunOptions {
    /// Default options.
    pub fn new() -> Self {
        RunOptions::default()
    }
    /// Compacts the history (a session's earlier turns included) before the run's first model
    /// turn whatever its size, with the agent's compaction (its strategy, what it keeps), as
    /// Claude Code's `/compact` does: BeforeCompact and AfterCompact hooks see it as `manual`
    /// ([`BeforeCompact::manual`](crate::hooks::BeforeCompact::manual)). An agent without
    /// compaction does not compact. Runs in this process only (the Temporal workflow does not
    /// take it).
    pub fn compact_first(mut self) -> Self {
        self.compact_first = true;
        self
    }
    /// Sets the run id.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }
    /// Sets the session id.
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }
    /// Sets the user id.
    pub fn user(mut self, id: impl Into<String>) -> Self {
        self.user_id = Some(id.into());
        self
    }
    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<serde_json::Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
    /// Adds a run-scope hook.
    pub fn with(mut self, hook: impl IntoHook) -> Self {
        self.hooks.add(hook);
        self
    }
    /// Adds a run-scope hook that is data: its spec is stored with the run's checkpoints, and a
    /// runtime that resumes the run (in this process or another) builds it again, if it was told
    /// it restores hooks of its kind (`Runtime::restores` in the `agentry` crate).
    pub fn with_stored<H: StoredHook>(mut self, hook: H) -> Self {
        self.stored_hooks.push(HookSpecRecord::of(&hook));
        self.hooks.add(hook);
        self
    }
    /// Adds a source of tools for this run (MCP servers, ...): the runtime asks it for its tools
    /// before each step, and the model can call them like the agent's own. The run's sub-agents
    /// get them too (after their own tools, which win on a name clash), as they get its hooks.
    pub fn with_tools(mut self, source: impl ToolSource) -> Self {
        self.tool_sources.push(Arc::new(source));
        self
    }
    /// Adds a source of tools that is data: like [`with_tools`](Self::with_tools), and its spec
    /// is stored with the run's checkpoints, so a runtime that resumes the run (in this process
    /// or another) builds it again, if it was told it restores sources of its kind
    /// (`Runtime::restores_tools` in the `agentry` crate).
    pub fn with_stored_tools<T: StoredToolSource>(mut self, source: T) -> Self {
        self.stored_hooks.push(source.record());
        self.tool_sources.push(Arc::new(source));
        self
    }
}
