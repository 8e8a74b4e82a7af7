//! Reading `agentry.toml`, with errors that point at the line and column.

use super::Config;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The file name looked for when no `-c` is given.
pub const FILE_NAME: &str = "agentry.toml";

/// A config file, read and parsed.
#[derive(Clone, Debug)]
pub struct LoadedConfig {
    /// What it declares.
    pub config: Config,
    /// The file it came from; `None` when no file was found (the defaults).
    pub path: Option<PathBuf>,
    /// The file's text (for locating later errors).
    pub text: String,
    /// The directory relative paths in it are resolved against.
    pub base_dir: PathBuf,
    /// What was merged over or under the file (the user's config, `-c` overrides), as shown.
    pub layers: Vec<String>,
}

/// A config that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Something in the file is wrong, at a known place.
    #[error("{0}")]
    At(Located),
    /// The config is right but what it names could not be had (a model download, a store
    /// server): the command fails (exit 1), it was not misused.
    #[error("{0}")]
    Unavailable(Box<ConfigError>),
    /// Something is wrong that has no one place in the file.
    #[error("{path}: {message}")]
    Invalid {
        /// The file, as shown.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// An error at a place in a file: `file:line:column: message`, then the line with a caret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The file, as shown.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong and what is allowed.
    pub message: String,
    /// The line's text.
    pub source_line: String,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )?;
        let gutter = self.line.to_string();
        writeln!(f, "{} |", " ".repeat(gutter.len()))?;
        writeln!(f, "{gutter} | {}", self.source_line)?;
        write!(
            f,
            "{} | {}^",
            " ".repeat(gutter.len()),
            " ".repeat(self.column.saturating_sub(1))
        )
    }
}

/// Places `message` at byte range `span` of `text` (a start inside a character counts as that
/// character's).
pub(super) fn locate(
    file: &str,
    text: &str,
    span: Range<usize>,
    message: impl Into<String>,
) -> Located {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..start].chars().count() + 1;
    let source_line = text[line_start..]
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    Located {
        file: file.to_owned(),
        line,
        column,
        message: message.into(),
        source_line,
    }
}

impl LoadedConfig {
    /// Reads `path`, or else `agentry.toml` in the current directory or the nearest parent that
    /// has one; with neither, the defaults (one agent on the local model with read-only tools).
    pub fn find(path: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
        match path {
            Some(path) => Self::read(path),
            None => {
                let cwd = std::env::current_dir().map_err(|source| ConfigError::Read {
                    path: PathBuf::from("."),
                    source,
                })?;
                match cwd
                    .ancestors()
                    .map(|dir| dir.join(FILE_NAME))
                    .find(|p| p.is_file())
                {
                    Some(found) => Self::read(&found),
                    None => Ok(LoadedConfig {
                        config: Config::default(),
                        path: None,
                        text: String::new(),
                        base_dir: cwd,
                        layers: Vec::new(),
                    }),
                }
            }
        }
    }

    /// Reads and parses one file.
    pub fn read(path: &Path) -> Result<LoadedConfig, ConfigError> {
        let text =
            agentry_external::read_config_file(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
        let base_dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base_dir = std::fs::canonicalize(&base_dir).unwrap_or(base_dir);
        Self::parse(&text, path, base_dir)
    }

    /// Parses `text` as the file `path` (which need not exist).
    pub fn parse(text: &str, path: &Path, base_dir: PathBuf) -> Result<LoadedConfig, ConfigError> {
        let shown = path.display().to_string();
        let config: Config = toml::from_str(text).map_err(|e| {
            let message = e.message().trim_end().to_owned();
            match e.span() {
                Some(span) => ConfigError::At(locate(&shown, text, span, message)),
                None => ConfigError::Invalid {
                    path: shown.clone(),
                    message,
                },
            }
        })?;
        Ok(LoadedConfig {
            config,
            path: Some(path.to_owned()),
            text: text.to_owned(),
            base_dir,
            layers: Vec::new(),
        })
    }

    /// The file as shown in messages.
    pub fn shown(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "(no agentry.toml: the defaults)".to_owned(),
        }
    }

    /// The config of agent `name` (else the default agent), to change for one command; a file
    /// that declares no agent gets the default assistant first.
    pub fn agent_mut(&mut self, name: Option<&str>) -> Result<&mut super::AgentConfig, String> {
        let config = &mut self.config;
        if config.agents.is_empty() {
            config
                .agents
                .insert(super::DEFAULT_AGENT.to_owned(), super::default_assistant());
        }
        let name = match name {
            Some(name) => name.to_owned(),
            None => match &config.default_agent {
                Some(name) => name.get_ref().clone(),
                None => self.first_agent().unwrap_or_default(),
            },
        };
        let agents = &mut self.config.agents;
        let known = agents.keys().cloned().collect::<Vec<_>>().join(", ");
        agents
            .get_mut(&name)
            .ok_or_else(|| format!("no agent is named `{name}`; the agents are: {known}"))
    }

    /// The first agent the file declares, by its place in the text.
    pub fn first_agent(&self) -> Option<String> {
        self.config
            .agents
            .keys()
            .filter_map(|name| {
                let at = self
                    .text
                    .find(&format!("[agents.{name}"))
                    .or_else(|| self.text.find(&format!("[agents.\"{name}\"")))?;
                Some((at, name))
            })
            .min()
            .map(|(_, name)| name.clone())
            .or_else(|| self.config.agents.keys().next().cloned())
    }

    /// An error at `span` of this file.
    pub fn error_at(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        if self.path.is_none() || self.text.is_empty() {
            return ConfigError::Invalid {
                path: self.shown(),
                message: message.into(),
            };
        }
        // With layers, the text is the merged one: say so, since its lines are not the file's.
        let shown = match self.layers.as_slice() {
            [] => self.shown(),
            layers => format!("{} (merged with {})", self.shown(), layers.join(", ")),
        };
        ConfigError::At(locate(&shown, &self.text, span, message))
    }

    /// An error with no one place.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.shown(),
            message: message.into(),
        }
    }

    /// `p` resolved against the config file's directory.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base_dir.join(path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_line_and_column() {
        let text = "a = 1\n[agents.x]\nmodle = \"local\"\n";
        let at = locate("f.toml", text, 17..22, "unknown field");
        assert_eq!((at.line, at.column), (3, 1));
        assert_eq!(at.source_line, "modle = \"local\"");
        let shown = at.to_string();
        assert!(shown.starts_with("f.toml:3:1: unknown field"), "{shown}");
        assert!(shown.ends_with("  | ^"), "{shown}");
    }

    #[test]
    fn unknown_keys_are_located() {
        let text = "[agents.helper]\nmodel = \"local\"\ninstructons = \"hi\"\n";
        let err = LoadedConfig::parse(text, Path::new("agentry.toml"), PathBuf::from("."))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("agentry.toml:3:1: unknown field `instructons`"),
            "{err}"
        );
        assert!(err.contains("`instructions`"), "{err}");
    }

    #[test]
    fn bad_values_are_located_with_what_is_allowed() {
        let text = "[agents.helper.compaction]\nstrategy = \"squash\"\nthreshold = 10\n";
        let err = LoadedConfig::parse(text, Path::new("a.toml"), PathBuf::from("."))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("a.toml:2:12:"), "{err}");
        assert!(err.contains("squash") && err.contains("summarize"), "{err}");
    }
}
