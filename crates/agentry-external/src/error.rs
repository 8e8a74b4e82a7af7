//! Errors of reading hook settings.

use std::fmt;
use std::path::{Path, PathBuf};

/// Settings that cannot be used: where the problem is, and what it is. Nothing is registered
/// from settings with an error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct SettingsError {
    file: Option<PathBuf>,
    at: String,
    message: String,
}

impl SettingsError {
    pub(crate) fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError {
            file: None,
            at: at.into(),
            message: message.into(),
        }
    }

    pub(crate) fn in_file(mut self, file: &Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }

    /// Where in the settings the problem is (`hooks.PreToolUse[0].matcher`).
    pub fn at(&self) -> &str {
        &self.at
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(
                f,
                "hook settings {}: {}: {}",
                file.display(),
                self.at,
                self.message
            ),
            None => write!(f, "hook settings: {}: {}", self.at, self.message),
        }
    }
}
