//! A real aimock server (`@copilotkit/aimock`, a third-party mock of the OpenAI Chat, OpenAI
//! Responses and Anthropic Messages APIs) per test, on 127.0.0.1, with the fixtures of
//! `tests/fixtures/aimock.json`, and the agent the provider tests run.
//!
//! The server is found at `$AGENTRY_AIMOCK` (the path of aimock's `dist/cli.js`), or where
//! `.ci/run` installs it: `~/.cache/agentry-tools/node_modules/@copilotkit/aimock/dist/cli.js`.
#![allow(dead_code)]

use agentry::Model;
use agentry::prelude::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// One running aimock server; killed when dropped.
pub struct Aimock {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The key the server demands, if it was started with `AIMOCK_API_KEYS`.
    key: Option<String>,
}

fn cli_path() -> PathBuf {
    if let Some(path) = std::env::var_os("AGENTRY_AIMOCK") {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/agentry-tools/node_modules/@copilotkit/aimock/dist/cli.js")
}

fn fixtures_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aimock.json")
}

impl Aimock {
    /// Starts a server with the shared fixtures.
    pub async fn start() -> Aimock {
        Aimock::start_with_env(&[]).await
    }

    /// Starts a server with extra environment variables; with `AIMOCK_API_KEYS` it answers 401
    /// to requests without one of those keys (its journal shows keys as `[REDACTED]`).
    pub async fn start_with_env(env: &[(&str, &str)]) -> Aimock {
        let cli = cli_path();
        assert!(
            cli.exists(),
            "aimock is not installed at {}: run `npm install --prefix ~/.cache/agentry-tools @copilotkit/aimock@1.43.0` (bash .ci/run does it) or set AGENTRY_AIMOCK to its dist/cli.js",
            cli.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new("node");
        command
            .arg(&cli)
            .args([
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
                "--log-level",
                "warn",
                "-f",
            ])
            .arg(fixtures_path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command.spawn().expect("node runs aimock");
        let key = env
            .iter()
            .find(|(name, _)| *name == "AIMOCK_API_KEYS")
            .map(|(_, keys)| keys.split(',').next().unwrap().to_owned());
        let server = Aimock {
            child,
            url: format!("http://127.0.0.1:{port}"),
            key,
        };
        let started = Instant::now();
        let client = reqwest::Client::new();
        loop {
            let health = client.get(format!("{}/health", server.url)).send().await;
            if health.is_ok_and(|r| r.status().is_success()) {
                return server;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "aimock did not start on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The OpenAI-style base URL (`.../v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Every request the server received, oldest first.
    pub async fn journal(&self) -> Vec<Value> {
        let mut request = reqwest::Client::new().get(format!("{}/__aimock/journal", self.url));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let body = request.send().await.unwrap().text().await.unwrap();
        let mut entries: Vec<Value> = serde_json::from_str(&body).unwrap();
        entries.sort_by_key(|e| e["timestamp"].as_u64());
        entries
    }

    /// The bodies of the model requests received, oldest first.
    pub async fn request_bodies(&self) -> Vec<Value> {
        self.journal()
            .await
            .into_iter()
            .map(|e| e["body"].clone())
            .collect()
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The weather tool's input.
#[derive(Deserialize, JsonSchema)]
pub struct City {
    /// The city.
    pub city: String,
    /// `celsius` or `fahrenheit`.
    pub unit: Option<String>,
}

/// The time tool's input.
#[derive(Deserialize, JsonSchema)]
pub struct Zone {
    /// A time zone.
    pub tz: String,
}

/// The calls the tools received, in order, as `name(args)`.
pub type Calls = Arc<Mutex<Vec<String>>>;

/// An agent with `get_weather` and `get_time` that records their calls.
pub fn weather_agent(model: impl Model) -> (Agent, Calls) {
    let calls: Calls = Arc::default();
    let log = calls.clone();
    let weather = tool(
        "get_weather",
        "The weather in a city",
        move |a: City, _ctx: ToolCtx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!(
                    "get_weather({},{})",
                    a.city,
                    a.unit.unwrap_or_default()
                ));
                Ok(format!("sunny in {}", a.city))
            }
        },
    );
    let log = calls.clone();
    let time = tool(
        "get_time",
        "The time in a zone",
        move |a: Zone, _ctx: ToolCtx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!("get_time({})", a.tz));
                Ok("12:00".to_string())
            }
        },
    );
    let agent = Agent::builder("weather")
        .instructions("Answer weather questions with the tools.")
        .model(model)
        .tool(weather)
        .tool(time)
        .build()
        .unwrap();
    (agent, calls)
}

/// The calls recorded, sorted (the two calls of one turn run concurrently).
pub fn sorted(calls: &Calls) -> Vec<String> {
    let mut calls = calls.lock().unwrap().clone();
    calls.sort();
    calls
}

/// A quick retry policy for tests.
pub fn quick_retries(n: u32) -> agentry_models::RetryPolicy {
    agentry_models::RetryPolicy::default()
        .max_retries(n)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(50))
}
