//! The one error type of this crate.

use std::path::PathBuf;

/// What went wrong when finding, fetching or loading a local model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file is not in the cache.
    #[error(
        "the local model `{model}` is not at {path}; fetch it once with `{command}` \
         (or set AGENTRY_MODEL to use a hosted provider, e.g. `openai:gpt-4.1-mini`)"
    )]
    ModelMissing {
        /// The catalog id of the model.
        model: String,
        /// Where it was looked for.
        path: PathBuf,
        /// The command that fetches it.
        command: String,
    },
    /// The model file is there but its bytes are not the pinned ones.
    #[error("the local model file {path} is corrupt: {reason}; fetch it again with `{command}`")]
    ModelCorrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
        /// The command that fetches it again.
        command: String,
    },
    /// A GGUF file could not be read or holds an architecture this crate cannot run.
    #[error("cannot load the GGUF model {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The tokenizer could not be built from the file's metadata.
    #[error("cannot build the tokenizer of {path}: {reason}")]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The chat template in the file does not compile.
    #[error("the chat template of {path} does not compile: {reason}")]
    Template {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Downloading a model failed.
    #[error("fetching `{model}` failed: {reason}")]
    Fetch {
        /// The catalog id of the model.
        model: String,
        /// What went wrong and what to try.
        reason: String,
    },
    /// The name given is not a model of the catalog.
    #[error(
        "`{name}` is not a known local model (known: {known}); or give the path of a .gguf file"
    )]
    UnknownModel {
        /// The name given.
        name: String,
        /// The catalog ids.
        known: String,
    },
    /// A file operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    /// An I/O error with what was being done and where.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
