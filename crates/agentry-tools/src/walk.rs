//! Walking the workspace as Claude Code's search tools do: .gitignore respected, `.git` skipped.

use ignore::WalkBuilder;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A walker of `base` that honours `.gitignore` (also outside a git repository), `.ignore` and
/// `.git/info/exclude`, shows hidden files, skips the `.git` directory and does not follow
/// symbolic links.
pub(crate) fn walker(base: &Path) -> WalkBuilder {
    let mut w = WalkBuilder::new(base);
    w.hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git");
    w
}

/// `paths` sorted by modification time, newest first (then by path).
pub(crate) fn newest_first(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut timed: Vec<(SystemTime, PathBuf)> = paths
        .into_iter()
        .map(|p| {
            let t = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (t, p)
        })
        .collect();
    timed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    timed.into_iter().map(|(_, p)| p).collect()
}
