//! A project directory with an `agentry.toml` and scripted model turns, and the real binary.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
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
