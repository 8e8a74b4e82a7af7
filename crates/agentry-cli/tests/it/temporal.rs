//! The binary on Temporal (the `temporal` feature): `agentry worker` hosts the config's agents,
//! `agentry run --temporal` runs one there, streams its events and stops at an approval, and
//! `agentry approve RUN --temporal`, another process, decides it: the run finishes on the
//! worker. The server is a Temporal dev server the test starts with the `temporal` CLI that
//! `AGENTRY_TEMPORAL_CLI` names (`bash .ci/run` installs it); without it the test is skipped,
//! and under CI=true it fails.

#![cfg(feature = "temporal")]

use crate::common::{Project, ndjson, run_id};
use serde_json::json;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A dev server on a port of its own, with its database in a temporary directory; killed
/// when dropped.
struct DevServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl DevServer {
    fn start() -> Option<DevServer> {
        let Some(cli) = std::env::var_os("AGENTRY_TEMPORAL_CLI").filter(|p| !p.is_empty()) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but AGENTRY_TEMPORAL_CLI is not set"
            );
            eprintln!("SKIPPED: AGENTRY_TEMPORAL_CLI is not set (the `temporal` CLI)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        // A port found free may be taken before the server binds it (other tests start
        // servers too): a server that exits at once is started again on other ports.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new(&cli)
                .args(["server", "start-dev", "--ip", "127.0.0.1", "--headless"])
                .args(["--port", &port.to_string()])
                .args(["--http-port", &free_port().to_string()])
                .args(["--metrics-port", &free_port().to_string()])
                .arg("--db-filename")
                .arg(dir.path().join(format!("temporal-{port}.db")))
                .args(["--log-level", "error"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let start = Instant::now();
            loop {
                // Listening, and still alive a moment later (what listens is not another
                // process on a port this one could not bind).
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    std::thread::sleep(Duration::from_millis(300));
                    if child.try_wait().unwrap().is_none() {
                        return Some(DevServer {
                            child,
                            port,
                            _dir: dir,
                        });
                    }
                    break;
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "the dev server did not listen within 60 s"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("the dev server exited at once on five pairs of ports");
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Stops a worker process when dropped (SIGTERM, as a service manager does), so a failing
/// assertion leaves none behind.
struct WorkerProcess(Child);

impl WorkerProcess {
    /// `agentry worker` in project `p`'s directory, with `env` set.
    fn start(p: &Project, env: &[(&str, &str)]) -> WorkerProcess {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("agentry"));
        cmd.arg("worker")
            .current_dir(p.path())
            .env_remove("AGENTRY_MODEL")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            cmd.env(key, value);
        }
        WorkerProcess(cmd.spawn().unwrap())
    }

    /// Sends SIGTERM and waits for the process: its exit code.
    fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.0.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            self.terminate();
        }
    }
}

#[test]
fn a_run_on_temporal_waits_for_an_approval_given_from_another_process() {
    let Some(dev) = DevServer::start() else {
        return;
    };
    let config = "[agents.writer]\nmodel = \"scripted:turns.json\"\ntools = [\"Write\"]\n\n\
         [temporal]\naddress = \"http://127.0.0.1:${TEMPORAL_PORT}\"\ntask_queue = \"cli\"\n";
    let p = Project::new(
        config,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "on temporal"}}]},
            {"text": "Wrote it."}
        ]),
    );
    let port = dev.port.to_string();
    let mut worker = WorkerProcess::start(&p, &[("TEMPORAL_PORT", &port)]);
    let json = |args: &[&str]| {
        let out = p
            .agentry()
            .env("TEMPORAL_PORT", &port)
            .arg("--json")
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        (
            ndjson(&out.stdout),
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (lines, code, stderr) = json(&["run", "--temporal", "write it"]);
    assert_eq!(
        code, 3,
        "the Write call waits for approval: {lines:?} {stderr}"
    );
    assert!(
        stderr.contains("--temporal"),
        "says how to decide it: {stderr}"
    );
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(
        kinds.contains(&"awaiting_approval"),
        "the events streamed: {kinds:?}"
    );
    let run = run_id(&lines);
    assert!(
        !p.file("out.txt").exists(),
        "nothing written before approval"
    );
    assert!(
        worker.0.try_wait().unwrap().is_none(),
        "the worker is still up"
    );

    let (lines, code, stderr) = json(&["approve", &run, "--temporal"]);
    assert_eq!(code, 0, "{lines:?} {stderr}");
    assert_eq!(
        lines.last().unwrap()["output"],
        "Wrote it.",
        "the run's result: {lines:?}"
    );
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(
        !kinds.contains(&"awaiting_approval"),
        "only what came after the decision: {kinds:?}"
    );
    // The answer streamed as the model sent it, as in-process.
    let streamed: String = lines
        .iter()
        .filter(|l| l["type"] == "text_delta")
        .filter_map(|l| l["text"].as_str())
        .collect();
    assert_eq!(streamed, "Wrote it.", "{lines:?}");
    assert_eq!(
        std::fs::read_to_string(p.file("out.txt")).unwrap(),
        "on temporal"
    );
    assert!(
        !p.file(".agentry/runs.db").exists() || {
            let (runs, _, _) = json(&["runs"]);
            runs.is_empty()
        },
        "the run is on Temporal, not in the local store"
    );

    // Deciding again: the run waits for nothing.
    let (lines, code, _) = json(&["approve", &run, "--temporal"]);
    assert_eq!(code, 1, "{lines:?}");
    assert!(
        lines[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("waits for no decision")),
        "{lines:?}"
    );

    // SIGTERM stops the worker gracefully.
    assert_eq!(worker.terminate(), Some(0));
}

/// The path of `@modelcontextprotocol/server-everything`'s entry point, or why the test is
/// skipped.
fn everything() -> Option<String> {
    match std::env::var("AGENTRY_MCP_EVERYTHING") {
        Ok(path) if !path.is_empty() => Some(path),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "AGENTRY_MCP_EVERYTHING must name server-everything's dist/index.js under CI"
            );
            eprintln!("SKIPPED: AGENTRY_MCP_EVERYTHING is not set");
            None
        }
    }
}

#[test]
fn a_worker_offers_the_configured_mcp_servers_tools() {
    let Some(dev) = DevServer::start() else {
        return;
    };
    let Some(everything) = everything() else {
        return;
    };
    let config = format!(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = []\n\n\
         [mcp_servers.everything]\ncommand = \"node\"\nargs = [\"{everything}\"]\n\n\
         [temporal]\naddress = \"http://127.0.0.1:{}\"\ntask_queue = \"cli-mcp\"\n",
        dev.port
    );
    let p = Project::new(
        &config,
        json!([
            {"tool_calls": [{"name": "mcp__everything__echo", "input": {"message": "via a worker"}}]},
            {"text": "Echoed."}
        ]),
    );
    let _worker = WorkerProcess::start(&p, &[]);
    let out = p
        .agentry()
        .args(["--json", "run", "--temporal", "echo it"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let lines = ndjson(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{lines:?}");
    let finished = lines
        .iter()
        .find(|l| l["type"] == "tool_finished")
        .expect("the MCP call settled");
    assert!(
        finished["result"]["content"]
            .as_str()
            .is_some_and(|c| c.contains("via a worker")),
        "{finished}"
    );
    assert_eq!(lines.last().unwrap()["output"], "Echoed.");
}

#[test]
fn a_failing_hook_on_temporal_is_reported_and_the_run_goes_on() {
    let Some(dev) = DevServer::start() else {
        return;
    };
    let config = "[agents.reader]\nmodel = \"scripted:turns.json\"\ntools = [\"Read\"]\n\n\
         [[hooks.events.PreToolUse]]\nmatcher = \"Read\"\n\
         hooks = [{ type = \"command\", command = \"echo broken >&2; exit 1\" }, { type = \"command\", command = \"./no-such-hook.sh\" }]\n\n\
         [temporal]\naddress = \"http://127.0.0.1:${TEMPORAL_PORT}\"\ntask_queue = \"cli-failing\"\n";
    let p = Project::new(
        config,
        json!([
            {"tool_calls": [{"name": "Read", "input": {"file_path": "agentry.toml"}}]},
            {"text": "Read it."}
        ]),
    );
    let port = dev.port.to_string();
    let mut worker = WorkerProcess::start(&p, &[("TEMPORAL_PORT", &port)]);
    let out = p
        .agentry()
        .env("TEMPORAL_PORT", &port)
        .args(["--json", "run", "--temporal", "read the config"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let lines = ndjson(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "fails open: {lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Read it.");
    let failures: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "hook_failed")
        .map(|l| l.to_string())
        .collect();
    assert_eq!(failures.len(), 2, "each failing command, once: {lines:?}");
    assert!(
        failures
            .iter()
            .any(|f| f.contains("broken") && f.contains("PreToolUse")),
        "{failures:?}"
    );
    assert!(
        failures.iter().any(|f| f.contains("no-such-hook.sh")),
        "{failures:?}"
    );
    assert_eq!(worker.terminate(), Some(0));
}
