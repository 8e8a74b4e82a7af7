//! agentry-external's webhook receiver in Python (its `tests/receiver/webhook_receiver.py`) that verifies each
//! delivery with the third-party `standardwebhooks` package and records it. Found through
//! `$AGENTRY_TEST_PYTHON`, a Python with that package.

use super::required;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The Standard Webhooks secret of the tests' deliveries (the example secret of the
/// specification's documentation).
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One running receiver; killed, and its log removed, when dropped.
pub struct Receiver {
    _child: Child,
    /// The port it listens on.
    pub port: u16,
    log: PathBuf,
}

impl Receiver {
    /// Starts a receiver, or returns `None` (having said so) when no Python is configured.
    pub async fn start(test: &str) -> Option<Receiver> {
        let python = required(
            test,
            "AGENTRY_TEST_PYTHON",
            "a Python with the `standardwebhooks` package",
        )?;
        let log = std::env::temp_dir().join(format!(
            "agentry-faultproxy-deliveries-{}-{}.jsonl",
            std::process::id(),
            unique_suffix()
        ));
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../agentry-external/tests/receiver/webhook_receiver.py"
        );
        let mut child = Command::new(&python)
            .arg(script)
            .arg(SECRET)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("AGENTRY_TEST_PYTHON={python:?} does not start: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .await
            .unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| {
            panic!("the receiver did not start (is standardwebhooks installed?): {line:?}")
        });
        Some(Receiver {
            _child: child,
            port,
            log,
        })
    }

    /// `127.0.0.1:PORT`, the proxy's upstream.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every delivery that reached it so far, in arrival order.
    pub fn deliveries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A number unlikely to repeat between the receivers of one process.
fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
