//! [`SqliteOptions`]: how a SQLite store in a file is opened.

use super::SqliteStore;
use agentry_core::StoreError;
use std::path::PathBuf;
use std::time::Duration;

/// How long a write waits for another connection's (or process's) write to finish, unless
/// [`SqliteOptions::busy_timeout`] says otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How a [`SqliteStore`] in a file is opened: the file, and how long a write waits for another
/// process's.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry_core::StoreError> {
/// use agentry_store::SqliteStore;
/// use std::time::Duration;
///
/// let dir = std::env::temp_dir().join(format!("agentry-doc-{}", std::process::id()));
/// let store = SqliteStore::options(dir.join("runs.db"))
///     .busy_timeout(Duration::from_millis(500))
///     .open()
///     .await?;
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    pub(super) path: PathBuf,
    pub(super) busy_timeout: Duration,
}

impl SqliteOptions {
    /// How long a write waits for another process's write to finish before it fails with
    /// "database is locked" (default [`DEFAULT_BUSY_TIMEOUT`], 5 s). A checkpoint that fails so
    /// fails its run, which stays at its last checkpoint, resumable once the other write ended.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Opens the store, creating the file (and missing parent directories) on first use and
    /// bringing its schema up to date.
    pub async fn open(self) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(&self).await
    }
}
