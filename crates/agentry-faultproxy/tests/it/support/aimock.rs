//! A real aimock server (`@copilotkit/aimock`, a third-party mock of the OpenAI and Anthropic
//! APIs) on 127.0.0.1, with the fixtures of `tests/fixtures/aimock.json`. Found at
//! `$AGENTRY_AIMOCK`, the path of aimock's `dist/cli.js`.

use super::{get_head, listening, required};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// One running aimock server; killed when dropped.
pub struct Aimock {
    _child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl Aimock {
    /// Starts a server, or returns `None` (having said so) when aimock is not installed.
    pub async fn start(test: &str) -> Option<Aimock> {
        let cli = required(
            test,
            "AGENTRY_AIMOCK",
            "the path of @copilotkit/aimock's dist/cli.js",
        )?;
        let port = super::free_port();
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/aimock.json");
        let child = Command::new("node")
            .arg(&cli)
            .args([
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
                "--log-level",
                "warn",
                "-f",
                fixtures,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs aimock");
        assert!(
            listening(port, Duration::from_secs(15)).await,
            "aimock did not start on port {port}"
        );
        Some(Aimock {
            _child: child,
            port,
        })
    }

    /// `127.0.0.1:PORT`, the proxy's upstream.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// How many model requests reached the server so far (its journal's count).
    pub async fn requests(&self) -> usize {
        let head = get_head(self.port, "/__aimock/journal").await;
        head.lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("x-total-count")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or_else(|| panic!("aimock's journal has no X-Total-Count: {head}"))
    }
}
