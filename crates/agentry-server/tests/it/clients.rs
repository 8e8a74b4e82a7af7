//! Each door tried with its protocol's own client library against a running server: the
//! OpenAI Python client (`openai`, in the Python of `AGENTRY_TEST_PYTHON`).

use crate::common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The Python with `module` installed, or `None` (said on stderr; under `CI=true` a failure).
pub fn python_with(module: &str) -> Option<PathBuf> {
    let python = std::env::var_os("AGENTRY_TEST_PYTHON").map(PathBuf::from);
    let ok = python.as_ref().is_some_and(|p| {
        std::process::Command::new(p)
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success())
    });
    if ok {
        return python;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but AGENTRY_TEST_PYTHON has no `{module}` (.ci/run installs it)"
    );
    eprintln!("skipping: no Python with `{module}` in AGENTRY_TEST_PYTHON");
    None
}

/// Runs a client script of `tests/clients` against `url` and reads the JSON it prints.
pub fn run_client(program: &std::path::Path, script: &str, url: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let out = std::process::Command::new(program)
        .arg(&script)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_calls_agents_as_models() {
    let Some(python) = python_with("openai") else {
        return;
    };
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let url = server.url.clone();
    let seen = tokio::task::spawn_blocking(move || run_client(&python, "openai_client.py", &url))
        .await
        .unwrap();
    assert_eq!(seen["models"], serde_json::json!(["echo", "ops", "slow"]));
    assert_eq!(seen["chat"]["text"], "echo: hello (turn 1)");
    assert_eq!(seen["chat"]["finish"], "stop");
    assert!(
        seen["chat"]["id"]
            .as_str()
            .unwrap()
            .starts_with("chatcmpl-")
    );

    // The stateless conversation reached the agent as a transcript ending with the new turn.
    let pieces: Vec<&str> = seen["chat_stream"]["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(pieces.len() > 1, "streamed in pieces: {pieces:?}");
    let text = pieces.concat();
    assert!(text.starts_with("echo: The conversation so far:"), "{text}");
    assert!(
        text.contains("user: first\nassistant: echo: first\n\nsecond"),
        "{text}"
    );
    assert_eq!(seen["chat_stream"]["finish"], "stop");

    assert!(
        seen["paused"]
            .as_str()
            .unwrap()
            .contains("`shell` (c1) wait for a person's approval"),
        "{}",
        seen["paused"]
    );
    // previous_response_id continues the session: the agent saw its first turn.
    assert_eq!(seen["responses"]["first"], "echo: one (turn 1)");
    assert_eq!(seen["responses"]["second"], "echo: two (turn 2)");
    assert_eq!(seen["responses"]["status"], "completed");
    let kinds: Vec<&str> = seen["responses_stream"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert!(kinds.contains(&"response.output_text.done"));
    let deltas: String = seen["responses_stream"]["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(deltas, "echo: streamed (turn 1)");
    assert_eq!(seen["responses_helper"], "echo: helper (turn 1)");
    assert!(
        seen["unknown_model"]
            .as_str()
            .unwrap()
            .contains("no agent `nobody`"),
        "{}",
        seen["unknown_model"]
    );
    server.shut_down().await;
}
