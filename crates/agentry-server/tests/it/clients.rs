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

/// The directory of the npm package `package` (at `version`) in `AGENTRY_NODE_MODULES`, with
/// node on the PATH, or `None` (said on stderr; under `CI=true` a failure).
pub fn node_package(package: &str, version: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AGENTRY_NODE_MODULES").map(|d| PathBuf::from(d).join(package));
    let found = dir.as_ref().and_then(|d| {
        let manifest = std::fs::read_to_string(d.join("package.json")).ok()?;
        let manifest: Value = serde_json::from_str(&manifest).ok()?;
        (manifest["version"] == version).then_some(())
    });
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    if found.is_some() && node {
        return dir;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but AGENTRY_NODE_MODULES has no {package}@{version} (.ci/run installs it)"
    );
    eprintln!("skipping: no {package}@{version} in AGENTRY_NODE_MODULES (or no node)");
    None
}

/// Runs a client script of `tests/clients` against `url` and reads the JSON it prints.
pub fn run_client(program: &std::path::Path, script: &str, url: &str) -> Value {
    run_client_with(program, script, url, &[])
}

/// [`run_client`], with environment variables.
pub fn run_client_with(
    program: &std::path::Path,
    script: &str,
    url: &str,
    env: &[(&str, &std::path::Path)],
) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let mut command = std::process::Command::new(program);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.arg(&script).arg(url).output().unwrap();
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
    assert_eq!(
        seen["models"],
        serde_json::json!(["echo", "notes", "ops", "slow", "team"])
    );
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
    // Images in the content parts reach the agent as image parts, before the text.
    assert_eq!(
        seen["chat_image"],
        "echo: [image image/png, 8 B]\nwhat is this? (turn 1)"
    );
    assert_eq!(
        seen["responses_image"],
        "echo: [image image/png, 8 B]\nand this? (turn 1)"
    );

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_chat_talks_to_agents_through_its_default_transport() {
    let Some(ai) = node_package("ai", "7.0.173") else {
        return;
    };
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(
        builder_on(store, Duration::from_secs(30))
            .agent(thinker())
            .build()
            .unwrap(),
    )
    .await;
    let url = server.url.clone();
    let seen = tokio::task::spawn_blocking(move || {
        run_client_with(
            std::path::Path::new("node"),
            "ai_sdk_chat.mjs",
            &url,
            &[("AGENTRY_AI_SDK", &ai)],
        )
    })
    .await
    .unwrap();

    // Two turns of one chat: one session.
    assert_eq!(seen["echo"]["status"], "ready");
    assert_eq!(
        seen["echo"]["texts"],
        serde_json::json!([
            "hello",
            "echo: hello (turn 1)",
            "again",
            "echo: again (turn 2)"
        ])
    );
    assert_eq!(seen["echo"]["stepStarts"], 1);
    assert_eq!(
        seen["image"],
        "echo: [image image/png, 8 B, shot.png]\nwhat is this? (turn 1)"
    );

    // The approval request reached the chat as the tool part's state, and the answer sent
    // from the chat ran the call.
    assert_eq!(seen["approval"]["state"], "approval-requested");
    assert_eq!(seen["approval"]["approvalId"], "c1");
    assert!(
        !seen["approval"]["input"]
            .to_string()
            .contains("sk-live-0123"),
        "the redactor masks the input: {}",
        seen["approval"]["input"]
    );
    assert_eq!(seen["approved"]["status"], "ready");
    assert_eq!(
        seen["approved"]["messages"], 2,
        "the run went on in the same message"
    );
    assert_eq!(seen["approved"]["toolState"], "output-available");
    assert_eq!(seen["approved"]["output"], "ran 54 chars");
    assert_eq!(seen["approved"]["text"], "result: ran 54 chars");

    // A sub-agent's text and tool call nested, the hook's decision as a data part.
    let team = &seen["team"];
    assert_eq!(team["status"], "ready");
    assert_eq!(team["text"], "All done.");
    // One part per run of the sub-agent, naming it.
    let parts = team["subagent"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{team}");
    assert_eq!(parts[0]["agentPath"], "team/researcher");
    assert_eq!(parts[0]["text"], "found three papers");
    assert_eq!(parts[0]["runId"].as_str().unwrap().len(), 36, "{team}");
    let hook = &team["hook"][0];
    assert_eq!(hook["hook"], "no-deletes");
    assert_eq!(hook["decision"], "blocked");
    assert_eq!(hook["tool"], "delete");
    let tools = team["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t["type"] == "tool-researcher"
            && t["state"] == "output-available"
            && t["output"] == "found three papers"),
        "{team}"
    );
    assert!(
        tools.iter().any(|t| t["type"] == "tool-delete"
            && t["errorText"]
                .as_str()
                .is_some_and(|e| e.contains("deleting is not allowed"))),
        "{team}"
    );
    assert!(team["onData"].as_u64().unwrap() >= 2, "{team}");
    assert_eq!(seen["resumed"], "ready");

    // Reasoning arrives as a reasoning part before the text, whole and done.
    assert_eq!(seen["thinker"]["status"], "ready");
    assert_eq!(
        seen["thinker"]["reasoning"],
        "The user asks why; because is an answer."
    );
    assert_eq!(seen["thinker"]["reasoningState"], "done");
    assert_eq!(seen["thinker"]["text"], "Because.");
    let types = seen["thinker"]["types"].as_array().unwrap();
    let at = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(at("reasoning") < at("text"), "{types:?}");
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ag_ui_client_runs_agents_and_resumes_their_interrupts() {
    let Some(ag_ui) = node_package("@ag-ui/client", "1.0.0") else {
        return;
    };
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let url = server.url.clone();
    let seen = tokio::task::spawn_blocking(move || {
        run_client_with(
            std::path::Path::new("node"),
            "ag_ui_agent.mjs",
            &url,
            &[("AGENTRY_AG_UI", &ag_ui)],
        )
    })
    .await
    .unwrap();
    let types = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };

    let echo = types(&seen["echo"]["types"]);
    assert_eq!(echo.first().map(String::as_str), Some("RUN_STARTED"));
    assert_eq!(echo.last().map(String::as_str), Some("RUN_FINISHED"));
    assert!(
        echo.contains(&"TEXT_MESSAGE_CONTENT".to_owned()),
        "{echo:?}"
    );
    assert_eq!(
        seen["echo"]["texts"],
        serde_json::json!(["echo: hello (turn 1)", "echo: again (turn 2)"])
    );
    assert_eq!(seen["echo"]["result"], "echo: hello (turn 1)");

    assert_eq!(
        seen["notes"]["state"],
        serde_json::json!({"items": ["milk", "eggs"]})
    );
    assert_eq!(seen["notes"]["deltas"], 2, "{}", seen["notes"]);

    assert_eq!(
        seen["interrupts"],
        serde_json::json!([{"id": "c1", "toolCallId": "c1", "reason": "tool_approval"}])
    );
    assert_eq!(seen["resumed"]["pending"], 0);
    assert_eq!(
        seen["resumed"]["toolResults"],
        serde_json::json!(["ran 54 chars"])
    );
    assert!(
        seen["resumed"]["texts"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("result: ran 54 chars")),
        "{}",
        seen["resumed"]
    );

    let team = types(&seen["team"]["types"]);
    for t in [
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "TOOL_CALL_RESULT",
        "CUSTOM",
    ] {
        assert!(team.contains(&t.to_owned()), "{t} missing: {team:?}");
    }
    assert_eq!(seen["team"]["hooks"][0]["decision"], "blocked");
    assert_eq!(seen["team"]["hooks"][0]["hook"], "no-deletes");
    assert_eq!(
        seen["team"]["subagentMessages"],
        serde_json::json!(["found three papers"])
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_client_sends_messages_streams_and_answers_input_required_tasks() {
    a2a_client_speaking(
        "1.0",
        &[
            "CancelTask",
            "GetTask",
            "SendMessage",
            "SendStreamingMessage",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_clients_of_protocol_0_3_are_answered_at_the_same_endpoint() {
    a2a_client_speaking(
        "0.3",
        &[
            "message/send",
            "message/stream",
            "tasks/cancel",
            "tasks/get",
        ],
    )
    .await;
}

/// The official a2a-sdk client, speaking `version` (its own 0.3 transport for 0.3), sends,
/// streams, answers a task that waits for input, gets and cancels tasks; `methods` are the
/// JSON-RPC methods it called.
async fn a2a_client_speaking(version: &str, methods: &[&str]) {
    let Some(python) = python_with("a2a.client") else {
        return;
    };
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let url = server.url.clone();
    let version = std::path::PathBuf::from(version);
    let seen = tokio::task::spawn_blocking(move || {
        run_client_with(
            &python,
            "a2a_client.py",
            &url,
            &[("A2A_PROTOCOL", version.as_path())],
        )
    })
    .await
    .unwrap();
    assert_eq!(seen["methods"], serde_json::json!(methods));
    let card = &seen["card"];
    assert_eq!(card["name"], "echo");
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["capabilities"]["streaming"], true);

    assert_eq!(seen["send"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(seen["send"]["answer"], "echo: hello (turn 1)");
    assert_eq!(
        seen["send"]["second"], "echo: again (turn 2)",
        "one context, one conversation"
    );
    assert_eq!(seen["send"]["same_context"], true);
    assert_eq!(seen["get"]["answer"], "echo: hello (turn 1)");
    assert!(
        seen["image"]
            .as_str()
            .unwrap()
            .starts_with("echo: [image image/png, 67 B, dot.png]\nwhat is this?"),
        "{}",
        seen["image"]
    );

    assert_eq!(seen["paused"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(
        seen["paused"]["message"]
            .as_str()
            .unwrap()
            .contains("`shell` (c1)"),
        "{}",
        seen["paused"]
    );
    assert_eq!(seen["approved"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(seen["approved"]["answer"], "result: ran 54 chars");
    assert_eq!(seen["approved"]["same_task"], true);

    let kinds = seen["stream"]["kinds"].as_array().unwrap();
    assert_eq!(kinds.first().unwrap(), "task");
    assert!(kinds.iter().any(|k| k == "artifact_update"));
    let chunks: String = seen["stream"]["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        chunks.starts_with("waiting 1waiting 2waiting 3done"),
        "{chunks}"
    );
    assert_eq!(
        seen["stream"]["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(seen["cancel"], "TASK_STATE_CANCELED");
    assert_eq!(seen["missing"], "TaskNotFoundError");
    server.shut_down().await;
}
