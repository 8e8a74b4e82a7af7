//! The workspace: the directory every file tool is confined to, and how paths are resolved in it.

use crate::Error;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// How many symbolic links one path may go through, as the kernel's own limit.
const MAX_LINKS: u32 = 40;

/// The directory the file tools work in, and may not leave.
///
/// Relative paths are relative to the root; absolute paths are accepted when they lead inside
/// it. A path is resolved component by component, following every symbolic link on the way
/// (also one whose target does not exist yet), so `..`, an absolute path elsewhere, or a link to
/// a file or a directory outside the root are all refused, with an error that names the path,
/// where it leads and the root. A file is checked again once it is open, so a link put in the
/// way between the check and the open is caught too.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let ws = agentry_tools::Workspace::new(dir.path())?;
/// assert_eq!(ws.resolve("src/main.rs")?, ws.root().join("src/main.rs"));
/// assert!(ws.resolve("../elsewhere").is_err());
/// assert!(ws.resolve("/etc/passwd").is_err());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Workspace {
    root: Arc<Path>,
}

impl Workspace {
    /// A workspace rooted at `root`, an existing directory (its canonical path is kept).
    pub fn new(root: impl AsRef<Path>) -> Result<Self, Error> {
        let given = root.as_ref();
        let bad = |reason: String| Error::WorkspaceRoot {
            root: given.to_path_buf(),
            reason,
        };
        let root = std::fs::canonicalize(given).map_err(|e| bad(e.to_string()))?;
        if !root.is_dir() {
            return Err(bad("it is not a directory".into()));
        }
        Ok(Workspace { root: root.into() })
    }

    /// The root directory (canonical: absolute, without symbolic links).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `path` leads: an absolute path inside the root without symbolic links or `..`
    /// (its last components may not exist yet). Refused when it leads outside the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, Error> {
        let bad = |reason: &str| Error::BadPath {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        if path.is_empty() {
            return Err(bad(
                "the path is empty; give a path relative to the workspace root, or an absolute path inside it",
            ));
        }
        if path.contains('\0') {
            return Err(bad("the path contains a NUL byte"));
        }
        let given = Path::new(path);
        let start = if given.is_absolute() {
            PathBuf::from("/")
        } else {
            self.root.to_path_buf()
        };
        let mut links = 0;
        let resolved = follow(start, given, &mut links).map_err(|reason| Error::BadPath {
            path: path.to_string(),
            reason,
        })?;
        if resolved.starts_with(&self.root) {
            return Ok(resolved);
        }
        // Say how it escapes: without following links, would it have stayed inside?
        let lexical = lexical(&self.root.join(given));
        let why = if lexical.starts_with(&self.root) {
            "a symbolic link on the way points outside"
        } else if given.is_absolute() {
            "an absolute path outside the root"
        } else {
            "`..` climbs out of the root"
        };
        Err(Error::OutsideWorkspace {
            path: path.to_string(),
            resolved,
            root: self.root.to_path_buf(),
            why,
        })
    }

    /// Checks that an open file is inside the root: catches a symbolic link put in the way of
    /// `resolved` after it was resolved.
    pub(crate) fn verify_open(
        &self,
        file: &File,
        resolved: &Path,
        given: &str,
    ) -> Result<(), Error> {
        let real = opened_path(file).or_else(|_| std::fs::canonicalize(resolved));
        match real {
            Ok(real) if real.starts_with(&self.root) => Ok(()),
            Ok(real) => Err(Error::OutsideWorkspace {
                path: given.to_string(),
                resolved: real,
                root: self.root.to_path_buf(),
                why: "a symbolic link was put in its way while it was being opened",
            }),
            Err(e) => Err(Error::io("find the real location of", resolved, e)),
        }
    }

    /// `path` as the model should see it: absolute.
    pub(crate) fn show(&self, path: &Path) -> String {
        path.display().to_string()
    }
}

/// The path an open file really has, from the kernel.
fn opened_path(file: &File) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Walks `rel` from `cur` (a path without links), following each symbolic link met on the
/// way; returns the path reached, without links, `.` or `..`.
fn follow(mut cur: PathBuf, rel: &Path, links: &mut u32) -> Result<PathBuf, String> {
    for comp in rel.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir => cur = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                // `cur` has no links, so its parent is the real `..`.
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                match std::fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        *links += 1;
                        if *links > MAX_LINKS {
                            return Err(format!(
                                "it goes through more than {MAX_LINKS} symbolic links"
                            ));
                        }
                        let target = std::fs::read_link(&next).map_err(|e| {
                            format!("the symbolic link `{}` cannot be read: {e}", next.display())
                        })?;
                        // A relative target is relative to the link's directory, `cur`.
                        cur = follow(cur, &target, links)?;
                    }
                    _ => cur = next,
                }
            }
        }
    }
    Ok(cur)
}

/// `path` with `.` and `..` removed by text alone, links not followed.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
