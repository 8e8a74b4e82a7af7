//! What a tool declares about itself besides its schema: where it comes from and its behaviour
//! hints (MCP's tool annotations).

use serde::{Deserialize, Serialize};

/// Hints a tool gives about its behaviour, as MCP's tool annotations carry them. They are hints
/// from the tool's author, not guarantees: use them for defaults (e.g. asking a person before a
/// destructive call), never as the only guard against an untrusted tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// True when the tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// True when the tool may destroy or overwrite data (meaningful when it is not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// True when calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// True when it reaches an open world of outside entities (the web, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// True when the tool says it may destroy data: `destructiveHint` is true and it does not
    /// also say it is read-only.
    pub fn is_destructive(&self) -> bool {
        self.destructive_hint == Some(true) && self.read_only_hint != Some(true)
    }
}

/// What a tool declares about itself besides its [`ToolSpec`](crate::ToolSpec): the source it
/// comes from (an MCP server's name) and its annotations. Tools give it with
/// [`Tool::info`](crate::Tool::info); the runtime puts it on the tool's BeforeTool, AfterTool and
/// ToolFailed events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Where the tool comes from, e.g. the name of the MCP server that serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The tool's behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

impl ToolInfo {
    /// True when the annotations say the tool may destroy data
    /// ([`ToolAnnotations::is_destructive`]).
    pub fn is_destructive(&self) -> bool {
        self.annotations
            .as_ref()
            .is_some_and(ToolAnnotations::is_destructive)
    }
}
