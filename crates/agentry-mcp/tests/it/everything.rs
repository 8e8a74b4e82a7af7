//! Against the official `@modelcontextprotocol/server-everything`, over stdio and Streamable
//! HTTP: tools as agentry tools, every call through the hooks, every content type, annotations,
//! progress.

use crate::common;

use agentry::RunOptions;
use agentry::content::Part;
use agentry::prelude::*;
use agentry::{RunEvent, ScriptedModel};
use agentry_mcp::{McpServers, PROGRESS_EVENT, ServerSpec};
use serde_json::json;
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<(agentry::Content, bool)>>>;
/// What BeforeTool hooks saw: the tool's name, its input, its source.
type Calls = Arc<Mutex<Vec<(String, serde_json::Value, Option<String>)>>>;

/// An agent whose AfterTool hook records what the model sees of each call.
fn agent(model: ScriptedModel, seen: &Seen) -> Agent {
    let seen = seen.clone();
    Agent::builder("assistant")
        .model(model)
        .after_tool(move |ev, _ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push((ev.content.clone(), ev.is_error));
                Ok(ev)
            }
        })
        .build()
        .unwrap()
}

fn seen() -> Seen {
    Arc::default()
}

#[tokio::test]
async fn tools_are_named_for_their_server_with_schema_and_annotations() {
    let Some(spec) =
        common::everything("tools_are_named_for_their_server_with_schema_and_annotations")
    else {
        return;
    };
    let servers = McpServers::single("everything", spec.deny_tool("get-env")).unwrap();
    let tools = servers.tools().await.unwrap();
    let echo = tools
        .iter()
        .find(|t| t.spec().name == "mcp__everything__echo")
        .expect("echo is listed");
    assert_eq!(echo.spec().parameters["type"], "object");
    assert!(echo.spec().parameters["properties"]["message"].is_object());
    let info = echo.info().expect("MCP tools say where they come from");
    assert_eq!(info.source.as_deref(), Some("everything"));
    let annotations = info.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.destructive_hint, Some(false));
    assert_eq!(annotations.idempotent_hint, Some(true));
    assert_eq!(annotations.open_world_hint, Some(false));
    assert!(!info.is_destructive());
    assert!(
        !tools
            .iter()
            .any(|t| t.spec().name == "mcp__everything__get-env"),
        "the deny list hides get-env"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn hooks_see_rewrite_and_block_mcp_calls() {
    let Some(spec) = common::everything("hooks_see_rewrite_and_block_mcp_calls") else {
        return;
    };
    let servers = McpServers::single("everything", spec).unwrap();
    let before: Calls = Arc::default();
    let model = ScriptedModel::new()
        .tool_call("mcp__everything__echo", json!({"message": "hello"}))
        .tool_call("mcp__everything__echo", json!({"message": "secret plans"}))
        .tool_call("mcp__everything__echo", json!({"message": "mock me"}))
        .tool_call("mcp__everything__echo", json!({"message": 42}))
        .text("done");
    let seen = seen();
    let log = before.clone();
    let wrapped: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let wrapped_log = wrapped.clone();
    let agent = Agent::builder("assistant")
        .model(model)
        .before_tool(move |mut ev, _ctx| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push((
                    ev.name().to_string(),
                    ev.input.clone(),
                    ev.source().map(str::to_string),
                ));
                if ev.input["message"] == "hello" {
                    ev.input = json!({"message": "rewritten by a hook"});
                } else if ev.input["message"] == "secret plans" {
                    ev.block("no secrets to the echo server");
                } else if ev.input["message"] == "mock me" {
                    ev.mock("Echo: from a mock");
                }
                Ok(ev)
            }
        })
        // Middleware wraps the calls that reach the server.
        .around_tool(move |req, next| {
            let wrapped = wrapped_log.clone();
            async move {
                wrapped.lock().unwrap().push(req.input.clone());
                next.run(req).await
            }
        })
        .build()
        .unwrap();
    let recorded = seen.clone();
    let failed = seen.clone();
    let runtime = Runtime::new()
        .with(on::after_tool(move |ev, _ctx| {
            let recorded = recorded.clone();
            async move {
                recorded
                    .lock()
                    .unwrap()
                    .push((ev.content.clone(), ev.is_error));
                Ok(ev)
            }
        }))
        // A call whose arguments fail the schema is not made; ToolFailed hooks see why.
        .with(on::tool_failed(move |ev, _ctx| {
            let failed = failed.clone();
            async move {
                failed.lock().unwrap().push((ev.error().into(), true));
                Ok(ev)
            }
        }));
    let out = runtime
        .run(&agent, "echo things")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let before = before.lock().unwrap().clone();
    assert_eq!(before.len(), 4);
    assert_eq!(before[0].0, "mcp__everything__echo");
    assert_eq!(before[0].1, json!({"message": "hello"}));
    assert_eq!(before[0].2.as_deref(), Some("everything"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], ("Echo: rewritten by a hook".into(), false));
    assert_eq!(seen[1], ("no secrets to the echo server".into(), true));
    assert_eq!(seen[2], ("Echo: from a mock".into(), false));
    assert!(
        seen[3].1,
        "invalid arguments go back to the model as an error"
    );
    assert!(
        seen[3].0.text().contains("do not match its schema"),
        "{}",
        seen[3].0
    );
    assert_eq!(
        *wrapped.lock().unwrap(),
        [json!({"message": "rewritten by a hook"})],
        "only the call that reached the server went through the middleware"
    );
    servers.shutdown().await;
}

#[tokio::test]
async fn every_content_type_reaches_the_model() {
    let Some(spec) = common::everything("every_content_type_reaches_the_model") else {
        return;
    };
    let servers = McpServers::single("everything", spec).unwrap();
    let model = ScriptedModel::new()
        .tool_call("mcp__everything__get-tiny-image", json!({}))
        .tool_call(
            "mcp__everything__get-structured-content",
            json!({"location": "New York"}),
        )
        .tool_call(
            "mcp__everything__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
        )
        .tool_call("mcp__everything__get-sum", json!({"a": 2, "b": 3}))
        .text("done");
    let seen = seen();
    let out = Runtime::new()
        .run(&agent(model, &seen), "show me")
        .with(RunOptions::new().with_tools(servers.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let seen = seen.lock().unwrap().clone();
    for (content, is_error) in &seen {
        assert!(!is_error, "{content}");
    }
    // The image arrives as an image part: its bytes (a real PNG), its media type.
    let image = seen[0]
        .0
        .parts()
        .iter()
        .find_map(|p| match p {
            Part::Image(m) => Some(m.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("an image part in {:?}", seen[0].0));
    assert_eq!(image.media_type, "image/png");
    let png = image.data().expect("the image's bytes are kept");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        !seen[0].0.text().is_empty(),
        "the text blocks stay: {:?}",
        seen[0].0
    );
    // Text with structuredContent: the model gets the structured content.
    let structured: serde_json::Value = serde_json::from_str(&seen[1].0.text()).unwrap();
    assert!(structured["temperature"].is_number(), "{structured}");
    // An embedded resource arrives as a file part named after its URI.
    let file = seen[2]
        .0
        .parts()
        .iter()
        .find_map(|p| match p {
            Part::File(m) => Some(m.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a file part in {:?}", seen[2].0));
    assert!(file.name.is_some(), "{file:?}");
    assert!(!file.data().unwrap().is_empty());
    assert!(seen[3].0.text().contains('5'), "{}", seen[3].0);
    servers.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_become_run_events() {
    let Some(spec) = common::everything("progress_notifications_become_run_events") else {
        return;
    };
    let servers = McpServers::single("everything", spec).unwrap();
    let model = ScriptedModel::new()
        .tool_call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
        )
        .text("done");
    let seen = seen();
    let mut handle = Runtime::new()
        .run(&agent(model, &seen), "work")
        .with(RunOptions::new().with_tools(servers.clone()))
        .start();
    let mut progress = Vec::new();
    while let Some(event) = futures::StreamExt::next(&mut handle.events()).await {
        if let RunEvent::Custom { name, data, .. } = event
            && name == PROGRESS_EVENT
        {
            progress.push(data);
        }
    }
    let out = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    assert_eq!(progress.len(), 3, "{progress:?}");
    assert_eq!(progress[0]["server"], "everything");
    assert_eq!(
        progress[0]["tool"],
        "mcp__everything__trigger-long-running-operation"
    );
    assert_eq!(progress[2]["progress"], 3.0);
    assert_eq!(progress[2]["total"], 3.0);
    servers.shutdown().await;
}

#[tokio::test]
async fn streamable_http_with_a_templated_secret_header() {
    let Some(script) = common::everything_script("streamable_http_with_a_templated_secret_header")
    else {
        return;
    };
    let port = common::free_port();
    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening") {
                return;
            }
        }
        panic!("server-everything exited before listening");
    })
    .await
    .expect("server-everything listens within 20 s");
    // SAFETY: set before any other thread of this test reads the environment.
    unsafe { std::env::set_var("AGENTRY_MCP_TEST_TOKEN", "s3cr3t-value") };
    let spec = ServerSpec::http(format!("http://127.0.0.1:{port}/mcp"))
        .header("Authorization", "Bearer ${AGENTRY_MCP_TEST_TOKEN}");
    let servers = McpServers::single("everything", spec).unwrap();
    let stored = agentry::StoredToolSource::spec(&servers).to_string();
    assert!(stored.contains("${AGENTRY_MCP_TEST_TOKEN}"), "{stored}");
    assert!(
        !stored.contains("s3cr3t-value"),
        "the secret is never stored"
    );
    let model = ScriptedModel::new()
        .tool_call("mcp__everything__echo", json!({"message": "over http"}))
        .text("done");
    let seen = seen();
    let out = Runtime::new()
        .run(&agent(model, &seen), "echo")
        .with(RunOptions::new().with_stored_tools(servers.clone()))
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    assert_eq!(seen.lock().unwrap()[0], ("Echo: over http".into(), false));
    servers.shutdown().await;
    child.kill().await.unwrap();
}
