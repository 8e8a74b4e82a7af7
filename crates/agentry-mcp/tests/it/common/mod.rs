//! What the tests share: finding the servers they start, and skipping (or, under `CI=true`,
//! failing) when one is not installed.

#![allow(dead_code)]

use agentry_mcp::ServerSpec;
use std::path::PathBuf;

/// The value of `var`, or `None` after saying the test is skipped; under `CI=true` a missing
/// server fails the test instead (.ci/run installs them all).
pub fn required(test: &str, var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: CI=true but {var} is not set ({what})"
            );
            println!("skipped: {test}: {var} is not set ({what}; .ci/run installs it)");
            None
        }
    }
}

/// `@modelcontextprotocol/server-everything`'s entry script (`AGENTRY_MCP_EVERYTHING`).
pub fn everything_script(test: &str) -> Option<String> {
    required(
        test,
        "AGENTRY_MCP_EVERYTHING",
        "the path of @modelcontextprotocol/server-everything's dist/index.js",
    )
}

/// server-everything over stdio.
pub fn everything(test: &str) -> Option<ServerSpec> {
    let script = everything_script(test)?;
    Some(ServerSpec::stdio("node").arg(script).arg("stdio"))
}

/// A Python with the `mcp` package (`AGENTRY_TEST_PYTHON`).
pub fn python(test: &str) -> Option<String> {
    required(
        test,
        "AGENTRY_TEST_PYTHON",
        "a Python with the `mcp` package",
    )
}

/// A script of `tests/servers`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/servers")
        .join(name)
}

/// The fault server (`tests/servers/faults.py`) over stdio.
pub fn faults(test: &str) -> Option<ServerSpec> {
    let python = python(test)?;
    Some(ServerSpec::stdio(python).arg(script("faults.py").display().to_string()))
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The raw JSON-RPC server (`tests/servers/raw.py`) over stdio, answering as `spec` says.
pub fn raw(test: &str, spec: serde_json::Value) -> Option<ServerSpec> {
    let python = python(test)?;
    Some(
        ServerSpec::stdio(python)
            .arg(script("raw.py").display().to_string())
            .arg(spec.to_string()),
    )
}

/// A tool of the raw server: its name and an empty object schema.
pub fn raw_tool(name: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "inputSchema": {"type": "object"}})
}

/// Fails when an error shown to the model or a hook carries Rust's own words: a type path, an
/// `Option`'s debug form, rmcp's transport wrapper.
pub fn no_rust_words(text: &str) {
    for word in ["::", "Some(", "None", "Transport [", "Err(", "Ok("] {
        assert!(!text.contains(word), "`{word}` in: {text}");
    }
}

/// Waits up to `within` for process `pid` to be gone (and reaped).
pub async fn gone(pid: u32, within: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    true
}

/// Runs `agent` on "go" with `servers` as its tool source, on a runtime of its own.
pub async fn run_on<S, O>(
    agent: &agentry::Agent<S, O>,
    servers: &agentry_mcp::McpServers,
) -> Result<agentry::RunOutput<S, O>, agentry::Error>
where
    S: agentry::AgentState,
    O: serde::de::DeserializeOwned,
{
    agentry::Runtime::new()
        .run(agent, "go")
        .with(agentry::RunOptions::new().with_tools(servers.clone()))
        .await
}
