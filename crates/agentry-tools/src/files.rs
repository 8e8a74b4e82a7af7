//! Opening, reading and writing files inside the workspace, checked again once open.

use crate::{Error, Workspace};
use nix::fcntl::OFlag;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Opening flags: the last component must not be a symbolic link (it was resolved already; a
/// link there now was put in after the check).
fn no_follow() -> i32 {
    OFlag::O_NOFOLLOW.bits()
}

/// An open error, with a link swapped in at the last moment said as such.
fn open_error(action: &'static str, path: &Path, given: &str, e: io::Error) -> Error {
    if e.raw_os_error() == Some(nix::libc::ELOOP) {
        return Error::BadPath {
            path: given.to_string(),
            reason: "it became a symbolic link while it was being opened; look at what changed it"
                .into(),
        };
    }
    if e.kind() == io::ErrorKind::NotFound {
        return Error::BadPath {
            path: given.to_string(),
            reason: format!(
                "`{}` does not exist; check the path (Glob lists files)",
                path.display()
            ),
        };
    }
    Error::io(action, path, e)
}

/// Opens the file `given` names for reading; returns it and its resolved path.
pub(crate) fn open_read(ws: &Workspace, given: &str) -> Result<(File, PathBuf), Error> {
    open_resolved(ws, given, ws.resolve(given)?)
}

/// Opens `path`, which `given` resolved to, for reading.
fn open_resolved(ws: &Workspace, given: &str, path: PathBuf) -> Result<(File, PathBuf), Error> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(&path)
        .map_err(|e| open_error("open", &path, given, e))?;
    ws.verify_open(&file, &path, given)?;
    let meta = file.metadata().map_err(|e| Error::io("read", &path, e))?;
    if meta.is_dir() {
        return Err(Error::BadPath {
            path: given.to_string(),
            reason: "it is a directory, not a file; list it with Glob or Bash `ls`".into(),
        });
    }
    Ok((file, path))
}

/// Reads the whole file `given` names as UTF-8 text.
pub(crate) fn read_text(ws: &Workspace, given: &str) -> Result<(String, PathBuf), Error> {
    let (mut file, path) = open_read(ws, given)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", &path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| Error::BadPath {
        path: given.to_string(),
        reason: "it is not UTF-8 text".into(),
    })?;
    Ok((text, path))
}

/// What a write did.
pub(crate) struct Written {
    /// Where it wrote.
    pub(crate) path: PathBuf,
    /// True when the file did not exist before.
    pub(crate) created: bool,
}

/// Writes `content` to the file `given` names, creating it and its parent directories as needed.
pub(crate) fn write(ws: &Workspace, given: &str, content: &[u8]) -> Result<Written, Error> {
    write_resolved(ws, given, ws.resolve(given)?, content)
}

/// Writes `content` to `path`, which `given` resolved to.
fn write_resolved(
    ws: &Workspace,
    given: &str,
    path: PathBuf,
    content: &[u8],
) -> Result<Written, Error> {
    if path == ws.root() {
        return Err(Error::BadPath {
            path: given.to_string(),
            reason: "it is the workspace root, a directory; name a file".into(),
        });
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io("create the directories of", &path, e))?;
    }
    let (mut file, created) = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(no_follow())
        .open(&path)
    {
        Ok(file) => (file, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(no_follow())
                .open(&path)
                .map_err(|e| open_error("open", &path, given, e))?;
            (file, false)
        }
        Err(e) => return Err(open_error("create", &path, given, e)),
    };
    if let Err(e) = ws.verify_open(&file, &path, given) {
        if created && let Error::OutsideWorkspace { resolved, .. } = &e {
            // Undo the empty file this created outside; it held nothing yet.
            let _ = std::fs::remove_file(resolved);
        }
        return Err(e);
    }
    file.set_len(0)
        .and_then(|()| file.write_all(content))
        .and_then(|()| file.flush())
        .map_err(|e| Error::io("write", &path, e))?;
    Ok(Written { path, created })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A workspace `root` and a directory `outside` beside it.
    fn sandbox() -> (tempfile::TempDir, Workspace, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/a")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        let ws = Workspace::new(dir.path().join("root")).unwrap();
        let outside = std::fs::canonicalize(dir.path().join("outside")).unwrap();
        (dir, ws, outside)
    }

    /// The directory is swapped for a link out after the path was resolved, before the open.
    fn swap(ws: &Workspace, outside: &Path) {
        std::fs::remove_dir_all(ws.root().join("a")).unwrap();
        symlink(outside, ws.root().join("a")).unwrap();
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_caught_on_write_and_nothing_is_left_outside() {
        let (_dir, ws, outside) = sandbox();
        let path = ws.resolve("a/new.txt").unwrap();
        swap(&ws, &outside);
        let err = write_resolved(&ws, "a/new.txt", path, b"data")
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("while it was being opened"),
            "{err}"
        );
        assert!(!outside.join("new.txt").exists());
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_caught_on_overwrite_and_read() {
        let (_dir, ws, outside) = sandbox();
        std::fs::write(ws.root().join("a/f.txt"), "inside").unwrap();
        std::fs::write(outside.join("f.txt"), "outside").unwrap();
        let path = ws.resolve("a/f.txt").unwrap();
        swap(&ws, &outside);
        let err = write_resolved(&ws, "a/f.txt", path.clone(), b"x")
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("outside the workspace root"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("f.txt")).unwrap(),
            "outside"
        );
        let err = open_resolved(&ws, "a/f.txt", path).err().unwrap();
        assert!(
            err.to_string().contains("outside the workspace root"),
            "{err}"
        );
    }

    #[test]
    fn a_file_swapped_for_a_link_after_the_check_is_not_followed() {
        let (_dir, ws, outside) = sandbox();
        std::fs::write(ws.root().join("a/f.txt"), "inside").unwrap();
        std::fs::write(outside.join("f.txt"), "outside").unwrap();
        let path = ws.resolve("a/f.txt").unwrap();
        std::fs::remove_file(&path).unwrap();
        symlink(outside.join("f.txt"), &path).unwrap();
        let err = write_resolved(&ws, "a/f.txt", path.clone(), b"x")
            .err()
            .unwrap();
        assert!(err.to_string().contains("became a symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.join("f.txt")).unwrap(),
            "outside"
        );
    }
}
