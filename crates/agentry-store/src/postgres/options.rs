//! [`PostgresOptions`]: how a PostgreSQL store connects.

use super::PostgresStore;
use agentry_core::StoreError;
use std::time::Duration;

/// How long the store's statements wait for a lock another transaction holds (a row of a run,
/// the `runs` table), unless [`PostgresOptions::lock_timeout`] says otherwise.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation of the store waits for a connection (a free one of its pool, or a new
/// one to open) before it fails, unless [`PostgresOptions::connect_timeout`] says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a [`PostgresStore`] connects: the database's URL, how long its statements wait for
/// another transaction's lock, and how long it waits for a connection.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry_core::StoreError> {
/// use agentry_store::PostgresStore;
/// use std::time::Duration;
///
/// let store = PostgresStore::options("postgres://agentry@127.0.0.1:5432/runs")
///     .lock_timeout(Duration::from_secs(2))
///     .connect_timeout(Duration::from_secs(5))
///     .connect()
///     .await?;
/// # drop(store);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    pub(super) url: String,
    pub(super) lock_timeout: Duration,
    pub(super) connect_timeout: Duration,
}

impl PostgresOptions {
    /// How long a statement of the store waits for a lock another transaction holds before it
    /// fails (PostgreSQL's `lock_timeout`; default [`DEFAULT_LOCK_TIMEOUT`], 5 s). A checkpoint
    /// that fails so fails its run, which stays at its last checkpoint, resumable once the other
    /// transaction ended. (A store made with [`PostgresStore::from_pool`] takes the pool's
    /// settings instead.)
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// How long an operation of the store waits for a connection before it fails (default
    /// [`DEFAULT_CONNECT_TIMEOUT`], 10 s): opening the store, and each checkpoint, load or
    /// lease renewal while the server is down or every pooled connection is busy. Connections
    /// cut by a server restart are replaced as they are next used, so a restart between two
    /// checkpoints goes unnoticed; a server still down when a checkpoint is due fails the run
    /// with the store's error (after this wait, and one more for recording the failure), and
    /// the run resumes from its last checkpoint once the server is back.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Connects, and brings the database's schema up to date.
    pub async fn connect(self) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(&self).await
    }
}

/// The URL is left out: it may hold a password.
impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("lock_timeout", &self.lock_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}
