//! What the tests share: the third-party servers they start, and skipping (or, under
//! `CI=true`, failing) when one is not installed.
#![allow(dead_code)]

pub mod aimock;
pub mod everything;
pub mod receiver;

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The value of `var`, or `None` after saying the test is skipped; under `CI=true` a missing
/// server fails the test instead (CI installs them all).
pub fn required(test: &str, var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: CI=true but {var} is not set ({what})"
            );
            println!("skipped: {test}: {var} is not set ({what})");
            None
        }
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits up to `within` for something to listen on `port`.
pub async fn listening(port: u16, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The head of the answer to `GET path` on 127.0.0.1:`port` (a request of the test's own,
/// not through the proxy).
pub async fn get_head(port: u16, path: &str) -> String {
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    conn.write_all(
        format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string()
}
