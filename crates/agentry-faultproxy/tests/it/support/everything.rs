//! The official MCP "everything" server (`@modelcontextprotocol/server-everything`) over
//! Streamable HTTP on 127.0.0.1. Found at `$AGENTRY_MCP_EVERYTHING`, the path of its
//! `dist/index.js`.

use super::required;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// One running server; killed when dropped.
pub struct Everything {
    _child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl Everything {
    /// Starts a server, or returns `None` (having said so) when it is not installed.
    pub async fn start(test: &str) -> Option<Everything> {
        let script = required(
            test,
            "AGENTRY_MCP_EVERYTHING",
            "the path of @modelcontextprotocol/server-everything's dist/index.js",
        )?;
        let port = super::free_port();
        let mut child = Command::new("node")
            .arg(&script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs server-everything");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("listening") {
                    return;
                }
            }
            panic!("server-everything exited before listening");
        })
        .await
        .expect("server-everything listens within 20 s");
        // Keep reading its stderr, so a full pipe never blocks it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(Everything {
            _child: child,
            port,
        })
    }

    /// `127.0.0.1:PORT`, the proxy's upstream.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}
