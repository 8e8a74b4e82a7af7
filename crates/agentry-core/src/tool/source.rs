//! Tool sources: sets of tools known only at run time (an MCP server's), asked for their tools
//! between steps.

use crate::Tool;
use crate::hooks::{BoxError, HookSpecRecord};
use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The tools a source offers at one moment. A source returns the same `Arc` while its tools do
/// not change, so the runtime rebuilds nothing between steps.
pub type ToolSet = Arc<[Arc<dyn Tool>]>;

/// A set of tools known only at run time, such as the tools of MCP servers. Attach one to a run
/// with [`RunOptions::with_tools`](crate::RunOptions::with_tools).
///
/// The runtime asks for the tools before the run's first step and again before each step,
/// never during one: a source whose tools change (a server's `list_changed`) is seen from the
/// next step on. Its tools go through the same hooks, validation and limits as the agent's own;
/// an agent's own tool wins over a source's tool of the same name.
pub trait ToolSource: Send + Sync + 'static {
    /// A name for errors and logs.
    fn name(&self) -> &str;

    /// The tools now. An error fails the run, naming the source; a source that can still offer
    /// the tools it had (a server that restarts) should return them rather than fail.
    fn tools(&self) -> BoxFuture<'_, Result<ToolSet, BoxError>>;

    /// What it leaves out now and why, one sentence each (an MCP server that cannot be
    /// started, say), asked after each [`tools`](Self::tools). The runtime reports each
    /// sentence once per run as a warning: a [`TOOL_SOURCE_WARNING`] custom event on the run's
    /// stream, with `{"source": name, "message": sentence}`. None by default.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The name of the custom run events that report a tool source's
/// [`warnings`](ToolSource::warnings).
pub const TOOL_SOURCE_WARNING: &str = "agentry.tool_source.warning";

impl fmt::Debug for dyn ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSource")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// A tool source that is data: its spec is stored with the checkpoints of a run it is attached
/// to ([`RunOptions::with_stored_tools`](crate::RunOptions::with_stored_tools)), so a run
/// resumed in another process gets it back, built by a runtime told it restores its kind
/// (`Runtime::restores_tools` in the `agentry` crate).
///
/// The spec must hold everything needed to build the source again, and no secret: keep secrets
/// as `${VAR}` templates resolved when they are used.
pub trait StoredToolSource: ToolSource + Sized {
    /// The kind, which names how to build the source again (e.g. `"agentry-mcp/servers"`).
    const KIND: &'static str;

    /// The spec.
    fn spec(&self) -> Value;

    /// The source again, from its spec.
    fn from_spec(spec: &Value) -> Result<Self, BoxError>;

    /// The record a checkpoint holds.
    fn record(&self) -> HookSpecRecord {
        HookSpecRecord {
            kind: Self::KIND.to_string(),
            spec: self.spec(),
        }
    }
}
