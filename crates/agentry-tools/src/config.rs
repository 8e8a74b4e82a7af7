//! Building the tools by name from configuration (TOML or JSON, read as JSON values).

use crate::{Bash, Edit, Error, Glob, Grep, Read, WebFetch, Workspace, Write};
use agentry_core::Tool;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The names of the built-in tools, as the model and hooks see them (Claude Code's).
pub const NAMES: &[&str] = &["Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch"];

/// The tools enabled when a configuration names none: the ones that only read the workspace.
pub const fn read_only() -> &'static [&'static str] {
    &["Read", "Glob", "Grep"]
}

/// Options of `Bash`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOptions {
    /// Whether each call waits for a person's approval (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
    /// The time limit of a call that gives no `timeout`, in milliseconds (default 120000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The longest `timeout` a call may ask for, in milliseconds (default 600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_timeout_ms: Option<u64>,
    /// The most bytes of output (stdout and stderr together) the model sees (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_cap: Option<usize>,
    /// The shell run with `-c` (default `bash` when installed, else `/bin/sh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
}

/// Options of `Read`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOptions {
    /// Whether each call waits for a person's approval (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
    /// The most lines one call returns (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<u64>,
    /// The most characters shown of one line (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_line_chars: Option<usize>,
    /// The most bytes one call returns (default 262144).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// Options of `Write`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteOptions {
    /// Whether each call waits for a person's approval (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
}

/// Options of `Edit`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditOptions {
    /// Whether each call waits for a person's approval (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
}

/// Options of `Glob`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobOptions {
    /// Whether each call waits for a person's approval (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
    /// The most paths one call returns (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<usize>,
}

/// Options of `Grep`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepOptions {
    /// Whether each call waits for a person's approval (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
    /// The most bytes one result holds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<usize>,
}

/// Options of `WebFetch`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchOptions {
    /// Whether each call waits for a person's approval (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
    /// The time limit of one fetch, in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The most bytes of a body read (default 2097152).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
}

/// Builds the built-in tool `name` (one of [`NAMES`]) with `options` (an object of that tool's
/// options, e.g. [`BashOptions`]; `null` or `{}` for the defaults), confined to `workspace`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let ws = agentry_tools::Workspace::new(dir.path())?;
/// let bash = agentry_tools::builtin("Bash", &serde_json::json!({"timeout_ms": 5000}), &ws)?;
/// assert!(bash.needs_approval());
/// let err = agentry_tools::builtin("Bash", &serde_json::json!({"timeout": 5}), &ws).err().unwrap();
/// assert!(err.to_string().contains("unknown field `timeout`"));
/// # Ok(()) }
/// ```
pub fn builtin(name: &str, options: &Value, workspace: &Workspace) -> Result<Arc<dyn Tool>, Error> {
    let ws = workspace;
    Ok(match name {
        "Bash" => {
            let o: BashOptions = options_of("Bash", options)?;
            let mut t = Bash::new(ws);
            if let Some(ms) = o.max_timeout_ms {
                t = t.max_timeout(Duration::from_millis(positive(
                    "Bash",
                    "max_timeout_ms",
                    ms,
                )?));
            }
            if let Some(ms) = o.timeout_ms {
                let ms = positive("Bash", "timeout_ms", ms)?;
                if let Some(max) = o.max_timeout_ms.filter(|max| ms > *max) {
                    return Err(Error::InvalidOption {
                        tool: "Bash",
                        option: "timeout_ms",
                        message: format!(
                            "{ms} is more than `max_timeout_ms` ({max}); make it at most that"
                        ),
                    });
                }
                t = t.timeout(Duration::from_millis(ms));
            }
            if let Some(cap) = o.output_cap {
                t = t.output_cap(at_least("Bash", "output_cap", cap, 2)?);
            }
            if let Some(shell) = o.shell {
                if shell.is_empty() {
                    return Err(Error::InvalidOption {
                        tool: "Bash",
                        option: "shell",
                        message: "it is empty; give a shell's path, e.g. /bin/sh".into(),
                    });
                }
                t = t.shell(shell);
            }
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "Read" => {
            let o: ReadOptions = options_of("Read", options)?;
            let mut t = Read::new(ws);
            if let Some(n) = o.max_lines {
                t = t.max_lines(positive("Read", "max_lines", n)?);
            }
            if let Some(n) = o.max_line_chars {
                t = t.max_line_chars(at_least("Read", "max_line_chars", n, 1)?);
            }
            if let Some(n) = o.max_bytes {
                t = t.max_bytes(positive("Read", "max_bytes", n)?);
            }
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "Write" => {
            let o: WriteOptions = options_of("Write", options)?;
            let mut t = Write::new(ws);
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "Edit" => {
            let o: EditOptions = options_of("Edit", options)?;
            let mut t = Edit::new(ws);
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "Glob" => {
            let o: GlobOptions = options_of("Glob", options)?;
            let mut t = Glob::new(ws);
            if let Some(n) = o.max_results {
                t = t.max_results(at_least("Glob", "max_results", n, 1)?);
            }
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "Grep" => {
            let o: GrepOptions = options_of("Grep", options)?;
            let mut t = Grep::new(ws);
            if let Some(n) = o.max_output {
                t = t.max_output(at_least("Grep", "max_output", n, 1)?);
            }
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        "WebFetch" => {
            let o: WebFetchOptions = options_of("WebFetch", options)?;
            let mut t = WebFetch::new();
            if let Some(ms) = o.timeout_ms {
                t = t.timeout(Duration::from_millis(positive(
                    "WebFetch",
                    "timeout_ms",
                    ms,
                )?));
            }
            if let Some(n) = o.max_bytes {
                t = t.max_bytes(at_least("WebFetch", "max_bytes", n, 1)?);
            }
            if let Some(a) = o.approval {
                t = t.approval(a);
            }
            Arc::new(t)
        }
        other => {
            return Err(Error::UnknownTool {
                name: other.to_string(),
                known: NAMES.join(", "),
            });
        }
    })
}

/// The JSON Schema of the options of the built-in tool `name`, or `None` when there is no such
/// tool: what a configuration file may say under that tool.
pub fn options_schema(name: &str) -> Option<Value> {
    Some(match name {
        "Bash" => schema::<BashOptions>(),
        "Read" => schema::<ReadOptions>(),
        "Write" => schema::<WriteOptions>(),
        "Edit" => schema::<EditOptions>(),
        "Glob" => schema::<GlobOptions>(),
        "Grep" => schema::<GrepOptions>(),
        "WebFetch" => schema::<WebFetchOptions>(),
        _ => return None,
    })
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// Reads `options` (`null` is the defaults) into the tool's options type.
fn options_of<T: DeserializeOwned + JsonSchema + Default>(
    tool: &'static str,
    options: &Value,
) -> Result<T, Error> {
    if options.is_null() {
        return Ok(T::default());
    }
    let Value::Object(map) = options else {
        return Err(Error::Options {
            tool,
            message: format!("they must be an object (a table) of options, not `{options}`"),
            allowed: allowed::<T>(),
        });
    };
    T::deserialize(options).map_err(|e| {
        // Name the option at fault: the first that fails on its own.
        let culprit = map.iter().find(|(key, value)| {
            let one = Value::Object([((*key).clone(), (*value).clone())].into_iter().collect());
            T::deserialize(&one).is_err()
        });
        let message = match culprit {
            Some((key, _)) if !e.to_string().contains("unknown field") => {
                format!("option `{key}`: {e}")
            }
            _ => e.to_string(),
        };
        Error::Options {
            tool,
            message,
            allowed: allowed::<T>(),
        }
    })
}

/// The option names of `T`, comma-separated.
fn allowed<T: JsonSchema>() -> String {
    let schema = schema::<T>();
    let names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn positive(tool: &'static str, option: &'static str, value: u64) -> Result<u64, Error> {
    if value == 0 {
        return Err(Error::InvalidOption {
            tool,
            option,
            message: "it is 0; give a positive number".into(),
        });
    }
    Ok(value)
}

fn at_least(
    tool: &'static str,
    option: &'static str,
    value: usize,
    min: usize,
) -> Result<usize, Error> {
    if value < min {
        return Err(Error::InvalidOption {
            tool,
            option,
            message: format!("it is {value}; give at least {min}"),
        });
    }
    Ok(value)
}
