//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// What can go wrong when building a tool or running one.
///
/// Tools hand these to the model as tool errors (a `ToolFailure` carrying the message), and the
/// run goes on; building a tool from configuration returns them to the caller. Every message
/// says what was refused or failed and what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No built-in tool has this name.
    #[error("there is no built-in tool `{name}`; the built-in tools are: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names that exist, comma-separated.
        known: String,
    },

    /// A tool's options could not be read (an unknown key, a wrong type).
    #[error(
        "the options of the built-in tool `{tool}` are invalid: {message}; the allowed options are: {allowed}"
    )]
    Options {
        /// The tool.
        tool: &'static str,
        /// What the options reader said.
        message: String,
        /// The option names the tool accepts, comma-separated.
        allowed: String,
    },

    /// One option has a value the tool cannot use.
    #[error("the option `{option}` of the built-in tool `{tool}` is invalid: {message}")]
    InvalidOption {
        /// The tool.
        tool: &'static str,
        /// The option.
        option: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },

    /// The workspace root is unusable.
    #[error(
        "the workspace root `{root}` cannot be used: {reason}; give an existing directory as the workspace root"
    )]
    WorkspaceRoot {
        /// The root asked for.
        root: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },

    /// A path resolves outside the workspace.
    #[error(
        "refused `{path}`: it resolves to `{resolved}`, outside the workspace root `{root}` ({why}); only paths inside the workspace can be used"
    )]
    OutsideWorkspace {
        /// The path as given.
        path: String,
        /// Where it leads.
        resolved: PathBuf,
        /// The workspace root.
        root: PathBuf,
        /// How it escapes (`..`, an absolute path, a symbolic link).
        why: &'static str,
    },

    /// A path is not usable as given (empty, a NUL byte, too many symbolic links).
    #[error("refused `{path}`: {reason}")]
    BadPath {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },

    /// A file operation failed.
    #[error("could not {action} `{path}`: {source}; check the path and its permissions")]
    Io {
        /// What was being done ("read", "write", "create the directory of", ...).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A tool's input is unusable, beyond what its schema says.
    #[error("{0}")]
    Input(String),

    /// A pattern (glob or regular expression) does not compile.
    #[error("the pattern `{pattern}` is invalid: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },

    /// The HTTP client could not be built.
    #[error(
        "the HTTP client for WebFetch could not be built: {0}; check the system's TLS and proxy settings"
    )]
    HttpClient(#[source] reqwest::Error),
}

impl Error {
    /// An I/O error while doing `action` to `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
