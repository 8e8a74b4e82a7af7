//! The model cache: a directory of verified GGUF files, shared by every run on the machine.

use crate::{CatalogModel, Error};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The directory that holds fetched models.
///
/// Its location is, in order: `AGENTRY_MODEL_DIR`; `$XDG_CACHE_HOME/agentry/models`;
/// `$HOME/.cache/agentry/models`; `.agentry/models` in the working directory.
///
/// A file is checked against its pinned sha256 once, when it is fetched or first found; a small
/// `<file>.verified` record beside it (hash, size, modification time) spares the hash on later
/// loads, and any change to the file brings the full check back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelCache {
    dir: PathBuf,
}

impl Default for ModelCache {
    fn default() -> Self {
        ModelCache::from_env()
    }
}

impl ModelCache {
    /// The cache at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ModelCache { dir: dir.into() }
    }

    /// The cache named by the environment (see the type's documentation).
    pub fn from_env() -> Self {
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = if let Some(dir) = env("AGENTRY_MODEL_DIR") {
            PathBuf::from(dir)
        } else if let Some(xdg) = env("XDG_CACHE_HOME") {
            PathBuf::from(xdg).join("agentry").join("models")
        } else if let Some(home) = env("HOME") {
            PathBuf::from(home)
                .join(".cache")
                .join("agentry")
                .join("models")
        } else {
            PathBuf::from(".agentry").join("models")
        };
        ModelCache { dir }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `model` lives in this cache (whether or not it is there).
    pub fn path(&self, model: &CatalogModel) -> PathBuf {
        self.dir.join(model.file_name)
    }

    /// The path of `model`, checked: an error says which command fetches it when it is missing,
    /// or fetches it again when its bytes are not the pinned ones. Blocking (it may hash the file
    /// once); call it off the async runtime.
    pub fn locate(&self, model: &CatalogModel) -> Result<PathBuf, Error> {
        let path = self.path(model);
        if !path.is_file() {
            return Err(Error::ModelMissing {
                model: model.id.to_owned(),
                path,
                command: self.fetch_command(model),
            });
        }
        self.verify(model, &path)?;
        Ok(path)
    }

    /// Whether `model` is in the cache with its pinned bytes (hashing it if that was never done).
    pub fn is_ready(&self, model: &CatalogModel) -> bool {
        self.locate(model).is_ok()
    }

    /// The command that fetches `model` into this cache: `agentry models fetch <id>`, with
    /// `AGENTRY_MODEL_DIR` set before it when this is not the cache the environment names.
    pub fn fetch_command(&self, model: &CatalogModel) -> String {
        let command = model.fetch_command();
        if *self == ModelCache::from_env() {
            command
        } else {
            format!("AGENTRY_MODEL_DIR={} {command}", self.dir.display())
        }
    }

    /// Checks `path` against the pinned size and hash, trusting a matching `.verified` record.
    pub(crate) fn verify(&self, model: &CatalogModel, path: &Path) -> Result<(), Error> {
        let corrupt = |reason: String| Error::ModelCorrupt {
            path: path.to_owned(),
            reason,
            command: self.fetch_command(model),
        };
        let stamp = file_stamp(path)?;
        if stamp.0 != model.size {
            return Err(corrupt(format!(
                "it has {} bytes where {} are expected",
                stamp.0, model.size
            )));
        }
        let record = verified_record(path);
        let expected = format!("{} {} {}", model.sha256, stamp.0, stamp.1);
        if fs::read_to_string(&record).is_ok_and(|r| r.trim() == expected) {
            return Ok(());
        }
        let actual = sha256_file(path)?;
        if actual != model.sha256 {
            return Err(corrupt(format!(
                "its sha256 is {actual} where {} is expected",
                model.sha256
            )));
        }
        mark_verified(path, model.sha256)
    }
}

/// The `.verified` record beside a model file.
fn verified_record(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

/// Records that `path` (as it is now) has the hash `sha256`.
pub(crate) fn mark_verified(path: &Path, sha256: &str) -> Result<(), Error> {
    let (size, mtime) = file_stamp(path)?;
    let record = verified_record(path);
    fs::write(&record, format!("{sha256} {size} {mtime}\n"))
        .map_err(|e| Error::io("cannot write", record, e))
}

/// The size and modification time (nanoseconds since the epoch) of a file.
fn file_stamp(path: &Path) -> Result<(u64, u128), Error> {
    let meta = fs::metadata(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok((meta.len(), mtime))
}

/// The lowercase hex sha256 of a file.
pub(crate) fn sha256_file(path: &Path) -> Result<String, Error> {
    let mut file = fs::File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| Error::io("cannot read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}
