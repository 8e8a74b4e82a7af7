//! A project directory with an `agentry.toml` and scripted model turns, and the real binary.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A temporary project.
pub struct Project {
    pub dir: TempDir,
}

impl Project {
    /// A project whose `agentry.toml` is `config` and whose `turns.json` is `turns`.
    pub fn new(config: &str, turns: Value) -> Project {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("agentry.toml"), config).unwrap();
        std::fs::write(dir.path().join("turns.json"), turns.to_string()).unwrap();
        Project { dir }
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A file of the project.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The user's agentry directory the project's commands see (`AGENTRY_HOME`): its own,
    /// so no user config or store of the machine's leaks in.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join(".agentry-home")
    }

    /// `agentry` in the project directory, without colour or a terminal.
    pub fn agentry(&self) -> Command {
        let mut cmd = Command::cargo_bin("agentry").expect("the agentry binary");
        cmd.current_dir(self.path())
            .env("AGENTRY_HOME", self.home())
            .env("CLAUDE_CONFIG_DIR", self.home().join("claude"))
            .env_remove("AGENTRY_MODEL")
            .env("NO_COLOR", "1");
        cmd
    }

    /// Runs `agentry --json args` and returns its NDJSON lines and exit code.
    pub fn json(&self, args: &[&str]) -> (Vec<Value>, i32) {
        let out = self.agentry().arg("--json").args(args).output().unwrap();
        (ndjson(&out.stdout), out.status.code().unwrap_or(-1))
    }
}

/// `agentry` in `dir`, a directory with no project of its own, without colour, with a user
/// directory (`AGENTRY_HOME`) inside `dir`.
pub fn agentry_in(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("agentry").expect("the agentry binary");
    cmd.current_dir(dir)
        .env("AGENTRY_HOME", dir.join(".agentry-home"))
        .env_remove("AGENTRY_MODEL")
        .env("NO_COLOR", "1");
    cmd
}

/// The objects of a `--json` command's stdout, one per line.
pub fn ndjson(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The run id in the last `result` line of a `--json` run.
pub fn run_id(lines: &[Value]) -> String {
    lines
        .iter()
        .rev()
        .find_map(|l| l.get("run_id").and_then(Value::as_str))
        .expect("a run id")
        .to_owned()
}

/// aimock's entry script: `$AGENTRY_AIMOCK`, else where `.ci/run` installs it.
pub fn aimock_cli() -> Option<PathBuf> {
    let path = match std::env::var_os("AGENTRY_AIMOCK") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache/agentry-tools/node_modules/@copilotkit/aimock/dist/cli.js"),
    };
    path.is_file().then_some(path)
}

/// A running aimock server, stopped when dropped.
pub struct Server {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An aimock server with the fixture file `tests/fixtures/<fixture>`, or `None` (the test is skipped) when aimock is not
/// installed; under CI=true a missing aimock fails the test.
pub fn aimock(fixture: &str) -> Option<Server> {
    aimock_with_env(fixture, &[])
}

/// [`aimock`] with variables set in its environment (e.g. `AIMOCK_API_KEYS`).
pub fn aimock_with_env(fixture: &str, env: &[(&str, &str)]) -> Option<Server> {
    let Some(cli) = aimock_cli() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "aimock is not installed (AGENTRY_AIMOCK); `bash .ci/run` installs it"
        );
        eprintln!("SKIPPED: aimock is not installed; set AGENTRY_AIMOCK to its dist/cli.js");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let child = std::process::Command::new("node")
        .arg(cli)
        .args([
            "-p",
            &port.to_string(),
            "-h",
            "127.0.0.1",
            "--log-level",
            "warn",
            "-f",
        ])
        .arg(fixtures)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .spawn()
        .expect("node runs aimock");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "aimock did not start"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    Some(server)
}
