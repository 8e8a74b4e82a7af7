//! Tools under the names and field names Claude Code hook scripts expect.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// How one agentry tool is presented to command hooks: under a Claude Code name, with its
/// input fields renamed, and its file paths made absolute.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolAlias {
    claude: String,
    /// (agentry field, Claude field)
    fields: Vec<(String, String)>,
    /// Claude fields that hold a file path (made absolute against the project directory).
    paths: Vec<String>,
}

impl ToolAlias {
    /// Presents the tool as `claude` (e.g. `"Bash"`), fields unchanged.
    pub fn new(claude: impl Into<String>) -> Self {
        ToolAlias {
            claude: claude.into(),
            fields: Vec::new(),
            paths: Vec::new(),
        }
    }

    /// Presents the agentry input field `agentry` as `claude` (e.g. `"path"` as `"file_path"`).
    pub fn field(mut self, agentry: impl Into<String>, claude: impl Into<String>) -> Self {
        self.fields.push((agentry.into(), claude.into()));
        self
    }

    /// Marks the Claude field `claude` as a file path: scripts get it absolute.
    pub fn path(mut self, claude: impl Into<String>) -> Self {
        self.paths.push(claude.into());
        self
    }

    fn to_claude_field<'a>(&'a self, agentry: &'a str) -> &'a str {
        self.fields
            .iter()
            .find(|(a, _)| a == agentry)
            .map_or(agentry, |(_, c)| c)
    }

    fn to_agentry_field<'a>(&'a self, claude: &'a str) -> &'a str {
        self.fields
            .iter()
            .find(|(_, c)| c == claude)
            .map_or(claude, |(a, _)| a)
    }
}

/// The names command hooks see tools under. Scripts compare `tool_name` exactly (`Bash`,
/// `Write`, `Edit`, `Read`, ...) and read Claude's field names (`Bash.command`,
/// `Write.file_path`/`content`, `Edit.old_string`/`new_string`), so agentry tools can be
/// presented that way; an `updatedInput` a script returns is mapped back before the tool sees
/// it. Matchers are tested against the presented name. A tool without an alias keeps its name
/// and fields.
///
/// ```
/// use agentry_external::{ToolAlias, ToolNames};
/// let names = ToolNames::claude_code()
///     .alias("run_sql", ToolAlias::new("Bash").field("query", "command"));
/// assert_eq!(names.claude_name("run_sql"), "Bash");
/// assert_eq!(names.claude_name("shell"), "Bash");
/// assert_eq!(names.claude_name("lookup"), "lookup");
/// ```
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ToolNames {
    aliases: HashMap<String, ToolAlias>,
}

impl ToolNames {
    /// No aliases: every tool keeps its own name and fields.
    pub fn none() -> Self {
        ToolNames::default()
    }

    /// Aliases for agentry's conventional tool names: `bash`/`shell` as `Bash` (`command`),
    /// `read_file` as `Read`, `write_file` as `Write`, `edit_file` as `Edit` and `multi_edit`
    /// as `MultiEdit` (`path` as `file_path`, `old`/`new` as `old_string`/`new_string`), `glob`
    /// as `Glob`, `grep` as `Grep`, `web_fetch` as `WebFetch`, `web_search` as `WebSearch`.
    pub fn claude_code() -> Self {
        let file = |claude: &str| {
            ToolAlias::new(claude)
                .field("path", "file_path")
                .path("file_path")
        };
        ToolNames::none()
            .alias("bash", ToolAlias::new("Bash").field("cmd", "command"))
            .alias("shell", ToolAlias::new("Bash").field("cmd", "command"))
            .alias("read_file", file("Read"))
            .alias("write_file", file("Write"))
            .alias(
                "edit_file",
                file("Edit")
                    .field("old", "old_string")
                    .field("new", "new_string"),
            )
            .alias("multi_edit", file("MultiEdit"))
            .alias("glob", ToolAlias::new("Glob"))
            .alias("grep", ToolAlias::new("Grep"))
            .alias("web_fetch", ToolAlias::new("WebFetch"))
            .alias("web_search", ToolAlias::new("WebSearch"))
    }

    /// Presents the agentry tool `tool` as `alias` describes.
    pub fn alias(mut self, tool: impl Into<String>, alias: ToolAlias) -> Self {
        self.aliases.insert(tool.into(), alias);
        self
    }

    /// The name command hooks see for the agentry tool `tool`.
    pub fn claude_name<'a>(&'a self, tool: &'a str) -> &'a str {
        self.aliases.get(tool).map_or(tool, |a| a.claude.as_str())
    }

    /// The input as command hooks see it.
    pub(crate) fn claude_input<'a>(
        &self,
        tool: &str,
        input: &'a Value,
        project: &Path,
    ) -> Cow<'a, Value> {
        let (Some(alias), Value::Object(fields)) = (self.aliases.get(tool), input) else {
            return Cow::Borrowed(input);
        };
        let mut out = Map::with_capacity(fields.len());
        for (k, v) in fields {
            let name = alias.to_claude_field(k);
            let v = if alias.paths.iter().any(|p| p == name) {
                absolute(v, project)
            } else {
                v.clone()
            };
            out.insert(name.to_string(), v);
        }
        Cow::Owned(Value::Object(out))
    }

    /// An input a hook returned (Claude's field names) as the agentry tool takes it.
    pub(crate) fn agentry_input(&self, tool: &str, input: Value) -> Value {
        let (Some(alias), Value::Object(fields)) = (self.aliases.get(tool), &input) else {
            return input;
        };
        let out: Map<String, Value> = fields
            .iter()
            .map(|(k, v)| (alias.to_agentry_field(k).to_string(), v.clone()))
            .collect();
        Value::Object(out)
    }
}

/// A path made absolute against `project` (and `~` expanded), as Claude Code gives file paths.
fn absolute(v: &Value, project: &Path) -> Value {
    let Value::String(p) = v else {
        return v.clone();
    };
    let path = Path::new(p);
    if path.is_absolute() {
        return v.clone();
    }
    if let Some(rest) = p.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Value::String(Path::new(&home).join(rest).display().to_string());
    }
    Value::String(project.join(path).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_renamed_both_ways_and_paths_made_absolute() {
        let names = ToolNames::claude_code();
        let input = json!({"path": "src/lib.rs", "old": "a", "new": "b"});
        let seen = names.claude_input("edit_file", &input, Path::new("/home/dev/project"));
        assert_eq!(
            *seen,
            json!({"file_path": "/home/dev/project/src/lib.rs", "old_string": "a", "new_string": "b"})
        );
        let back = names.agentry_input(
            "edit_file",
            json!({"file_path": "/x", "old_string": "c", "new_string": "d"}),
        );
        assert_eq!(back, json!({"path": "/x", "old": "c", "new": "d"}));
        // Unaliased tools pass through untouched.
        let same = names.claude_input("lookup", &input, Path::new("/"));
        assert!(matches!(same, Cow::Borrowed(_)));
    }
}
