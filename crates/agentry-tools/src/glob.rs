//! `Glob`: files whose path matches a pattern, newest first.

use crate::blocking::{Cancelled, blocking};
use crate::walk::{newest_first, walker};
use crate::{Error, Workspace};
use agentry_core::{StructTool, ToolCtx, ToolFailure};
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The input of [`Glob`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The pattern, e.g. `**/*.rs` or `src/**/*.{ts,tsx}`, matched against paths relative to
    /// `path`. `*` stays within one directory; `**` crosses directories.
    pub pattern: String,
    /// The directory to search (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Finds files whose path matches a glob pattern, as Claude Code's `Glob` does: files ignored by
/// `.gitignore` (and `.ignore`) are left out, the `.git` directory too; results are sorted by
/// modification time, newest first, and capped (100 by default).
#[derive(Clone, Debug)]
pub struct Glob {
    ws: Workspace,
    max_results: usize,
    approval: bool,
}

impl Glob {
    /// The default cap on paths returned.
    pub const DEFAULT_MAX_RESULTS: usize = 100;

    /// `Glob` confined to `workspace`.
    pub fn new(workspace: &Workspace) -> Self {
        Glob {
            ws: workspace.clone(),
            max_results: Self::DEFAULT_MAX_RESULTS,
            approval: false,
        }
    }

    /// The most paths one call returns.
    pub fn max_results(mut self, max: usize) -> Self {
        self.max_results = max.max(1);
        self
    }

    /// Whether each call waits for a person's approval (default: no).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }
}

impl StructTool for Glob {
    type Input = GlobInput;
    type Output = String;
    const NAME: &'static str = "Glob";
    const DESCRIPTION: &'static str = "Finds files by name pattern (e.g. `**/*.rs`, \
        `src/**/*.{ts,tsx}`) in the workspace or under `path`, newest first. Files ignored by \
        .gitignore are left out. Returns absolute paths.";

    async fn run(&self, input: GlobInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let ws = self.ws.clone();
        let max = self.max_results;
        blocking(move |cancelled| glob(&ws, &input, max, &cancelled)).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// The directory `path` names (default the root), checked.
pub(crate) fn search_dir(ws: &Workspace, path: Option<&str>) -> Result<PathBuf, Error> {
    let given = path.unwrap_or(".");
    let dir = ws.resolve(given)?;
    if !dir.exists() {
        return Err(Error::BadPath {
            path: given.to_string(),
            reason: format!("`{}` does not exist", dir.display()),
        });
    }
    Ok(dir)
}

/// Runs one search.
fn glob(
    ws: &Workspace,
    input: &GlobInput,
    max: usize,
    cancelled: &Cancelled,
) -> Result<String, Error> {
    let base = search_dir(ws, input.path.as_deref())?;
    if !base.is_dir() {
        return Err(Error::BadPath {
            path: input.path.clone().unwrap_or_default(),
            reason: "it is a file; give a directory as `path`".into(),
        });
    }
    let pattern = relative_pattern(&input.pattern, &base, ws)?;
    let matcher = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| Error::Pattern {
            pattern: input.pattern.clone(),
            message: e.kind().to_string(),
        })?
        .compile_matcher();
    let mut found = Vec::new();
    for entry in walker(&base).build().flatten() {
        if cancelled.is_set() {
            return Err(Error::Input("the search was cancelled".into()));
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if matcher.is_match(rel) {
            found.push(entry.into_path());
        }
    }
    if found.is_empty() {
        return Ok(format!(
            "No files match `{}` in `{}`",
            input.pattern,
            base.display()
        ));
    }
    let total = found.len();
    let found = newest_first(found);
    let mut out: Vec<String> = found.iter().take(max).map(|p| ws.show(p)).collect();
    if total > max {
        out.push(format!(
            "[{} more files match; narrow the pattern or the path]",
            total - max
        ));
    }
    Ok(out.join("\n"))
}

/// The pattern relative to `base`: an absolute pattern inside `base` has its prefix removed.
fn relative_pattern(pattern: &str, base: &Path, ws: &Workspace) -> Result<String, Error> {
    if !pattern.starts_with('/') {
        return Ok(pattern.to_string());
    }
    let prefix = format!("{}/", base.display());
    match pattern.strip_prefix(&prefix) {
        Some(rest) => Ok(rest.to_string()),
        None => Err(Error::Input(format!(
            "the pattern `{pattern}` is absolute but not under the directory searched, `{}`; give a pattern relative to it (the workspace root is `{}`)",
            base.display(),
            ws.root().display()
        ))),
    }
}
