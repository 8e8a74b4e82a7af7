//! What the store tests share: a temporary directory and a database of its own per test.

#![allow(dead_code)]

pub mod own_postgres;

use agentry::prelude::*;
use agentry::{Message, ModelRequest};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `prefix` and a suffix no other test of any process shares: the process id, the time's
/// nanoseconds and a counter.
pub fn unique(prefix: &str) -> String {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}{}-{nanos}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory of its own for one test, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let dir = std::env::temp_dir().join(unique("agentry-store-test-"));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const URL_VAR: &str = "AGENTRY_TEST_POSTGRES_URL";

/// A database of its own for one test, dropped (with its connections) when this is dropped.
pub struct TestDatabase {
    /// The server's URL, as given.
    pub server: String,
    /// The database's name.
    pub name: String,
}

impl TestDatabase {
    /// A new, empty database on the test server, or `None` (said on stderr) without one.
    pub async fn create() -> Option<TestDatabase> {
        let Ok(server) = std::env::var(URL_VAR) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but {URL_VAR} is not set (.ci/run starts a server and sets it)"
            );
            eprintln!(
                "skipping: no Postgres server at ${URL_VAR} (unset); set {URL_VAR}, e.g. \
                 postgres://postgres@127.0.0.1:5432/postgres"
            );
            return None;
        };
        let mut admin = match admin(&server).await {
            Ok(admin) => admin,
            Err(why) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true but the Postgres server at {} is unreachable: {why}",
                    where_(&server)
                );
                eprintln!(
                    "skipping: no Postgres server at {}: {why}; set {URL_VAR}",
                    where_(&server)
                );
                return None;
            }
        };
        let name = unique("agentry_test_").replace('-', "_");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("creating the test database");
        admin.close().await.ok();
        Some(TestDatabase { server, name })
    }

    /// The URL of the test database: the server's, with the database's name as its path.
    pub fn url(&self) -> String {
        let (base, params) = match self.server.split_once('?') {
            Some((base, params)) => (base, format!("?{params}")),
            None => (self.server.as_str(), String::new()),
        };
        let authority = base.find("://").map_or(0, |i| i + 3);
        let base = match base[authority..].find('/') {
            Some(slash) => &base[..authority + slash],
            None => base,
        };
        format!("{base}/{}{params}", self.name)
    }

    /// A pool on the test database.
    pub async fn pool(&self) -> PgPool {
        let options: PgConnectOptions = self.server.parse().unwrap();
        PgPool::connect_with(options.database(&self.name))
            .await
            .unwrap()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // No async drop: drop the database from a thread with a runtime of its own.
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut admin = admin(&server).await?;
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&mut admin)
                    .await?;
                admin.close().await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!(
                "could not drop the test database {}: {dropped:?}",
                self.name
            );
        }
    }
}

/// A connection to the server's maintenance database, within 5 seconds.
pub async fn admin(server: &str) -> Result<PgConnection, sqlx::Error> {
    tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(server))
        .await
        .unwrap_or(Err(sqlx::Error::PoolTimedOut))
}

/// Where the server is, without the user and password.
pub fn where_(server: &str) -> String {
    match server.parse::<PgConnectOptions>() {
        Ok(o) => format!("{}:{}", o.get_host(), o.get_port()),
        Err(_) => format!("${URL_VAR} (not a valid URL)"),
    }
}

/// Where a runtime test keeps its runs: a SQLite file, or a database of its own on the Postgres
/// test server.
pub enum Backend {
    /// A file in a temporary directory.
    Sqlite(TempDir),
    /// A database on the test server.
    Postgres(TestDatabase),
}

impl Backend {
    /// SQLite always; Postgres too when the test server is reachable (else said on stderr).
    pub async fn all() -> Vec<Backend> {
        let mut all = vec![Backend::Sqlite(TempDir::new())];
        if let Some(db) = TestDatabase::create().await {
            all.push(Backend::Postgres(db));
        }
        all
    }

    /// How a child process opens it: `sqlite:<path>` or `postgres:<url>`.
    pub fn spec(&self) -> String {
        match self {
            Backend::Sqlite(dir) => format!("sqlite:{}", dir.path().join("runs.db").display()),
            Backend::Postgres(db) => format!("postgres:{}", db.url()),
        }
    }

    /// A new store on it, as a new process would open it.
    pub async fn open(&self) -> std::sync::Arc<dyn agentry_core::RunStore> {
        open_spec(&self.spec()).await
    }

    /// A name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}

/// Opens the store a [`Backend::spec`] names.
pub async fn open_spec(spec: &str) -> std::sync::Arc<dyn agentry_core::RunStore> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        std::sync::Arc::new(agentry_store::SqliteStore::open(path).await.unwrap())
    } else if let Some(url) = spec.strip_prefix("postgres:") {
        std::sync::Arc::new(agentry_store::PostgresStore::connect(url).await.unwrap())
    } else {
        panic!("unknown store spec {spec}")
    }
}

/// Moves a run's lease on by one behind its holder's back, as a process that took the run over
/// would (for tests of a holder that lost its lease).
pub async fn take_over(spec: &str, run_id: &str) {
    let sql = "UPDATE runs SET lease = lease + 1 WHERE run_id = $1";
    let changed = if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = agentry_store::SqliteStore::open(path).await.unwrap();
        let done = sqlx::query(sql).bind(run_id).execute(store.pool()).await;
        done.unwrap().rows_affected()
    } else if let Some(url) = spec.strip_prefix("postgres:") {
        let store = agentry_store::PostgresStore::connect(url).await.unwrap();
        let done = sqlx::query(sql).bind(run_id).execute(store.pool()).await;
        done.unwrap().rows_affected()
    } else {
        panic!("unknown store spec {spec}")
    };
    assert_eq!(changed, 1, "no run `{run_id}` to take over");
}

/// The input of the test agents' `work` tool: which step it does.
#[derive(Deserialize, JsonSchema)]
pub struct Step {
    pub n: u32,
}

/// How many tool results a model request holds: the steps done so far, for scripted models that
/// answer by step.
pub fn results_in(req: &ModelRequest) -> usize {
    req.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count()
}
