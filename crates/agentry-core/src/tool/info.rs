//! What a tool declares about itself besides its schema: where it comes from, its behaviour
//! hints (MCP's tool annotations) and the schema of its structured results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Hints a tool gives about its behaviour, as MCP's tool annotations carry them. They are hints
/// from the tool's author, not guarantees: use them for defaults (e.g. asking a person before a
/// destructive call), never as the only guard against an untrusted tool.
///
/// A hint left out means what the MCP specification says it means: not read-only,
/// destructive, not idempotent, open-world. The methods ([`read_only`](Self::read_only),
/// [`destructive`](Self::destructive), ...) apply those defaults; MCP tools carry every hint
/// filled in ([`with_defaults`](Self::with_defaults)), so a tool that says nothing about
/// itself counts as destructive.
///
/// ```
/// use agentry_core::ToolAnnotations;
/// let silent = ToolAnnotations::default();
/// assert!(silent.is_destructive());
/// let reader = ToolAnnotations { read_only_hint: Some(true), ..Default::default() };
/// assert!(!reader.is_destructive());
/// assert_eq!(silent.with_defaults().open_world_hint, Some(true));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// True when the tool does not change its environment (left out: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// True when the tool may destroy or overwrite data, meaningful when it is not read-only
    /// (left out: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// True when calling it again with the same arguments has no further effect (left out:
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// True when it reaches an open world of outside entities, the web for one (left out:
    /// true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// True when the tool says it does not change its environment.
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// True unless the tool says it does not destroy or overwrite data.
    pub fn destructive(&self) -> bool {
        self.destructive_hint.unwrap_or(true)
    }

    /// True when the tool says a repeated call has no further effect.
    pub fn idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }

    /// True unless the tool says it stays within a closed world.
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }

    /// True when the tool may destroy data: it is not read-only and does not say it is not
    /// destructive.
    pub fn is_destructive(&self) -> bool {
        !self.read_only() && self.destructive()
    }

    /// The same annotations with every hint left out set to its default, so a reader that
    /// looks at the fields sees what the tool means.
    pub fn with_defaults(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: self.title.clone(),
            read_only_hint: Some(self.read_only()),
            destructive_hint: Some(self.destructive()),
            idempotent_hint: Some(self.idempotent()),
            open_world_hint: Some(self.open_world()),
        }
    }
}

/// What a tool declares about itself besides its [`ToolSpec`](crate::ToolSpec): the source it
/// comes from (an MCP server's name), its annotations and the JSON Schema of its structured
/// results. Tools give it with [`Tool::info`](crate::Tool::info); the runtime puts it on the
/// tool's BeforeTool, AfterTool and ToolFailed events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// Where the tool comes from, e.g. the name of the MCP server that serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The tool's behaviour hints. A tool without them is not judged by them: only annotations
    /// that are there (even empty ones) say a tool is destructive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// The JSON Schema its structured results follow (MCP's `outputSchema`), when it declares
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of the two hints that decide it, left out, false or true.
    #[test]
    fn destructive_follows_the_specification_defaults() {
        let hints = [None, Some(false), Some(true)];
        for read_only in hints {
            for destructive in hints {
                let a = ToolAnnotations {
                    read_only_hint: read_only,
                    destructive_hint: destructive,
                    ..Default::default()
                };
                let expected = read_only != Some(true) && destructive != Some(false);
                assert_eq!(
                    a.is_destructive(),
                    expected,
                    "readOnlyHint {read_only:?}, destructiveHint {destructive:?}"
                );
                assert_eq!(a.with_defaults().is_destructive(), expected);
            }
        }
        assert!(
            !ToolInfo::default().is_destructive(),
            "no annotations at all"
        );
    }
}
