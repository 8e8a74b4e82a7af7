//! `agentry serve` as a real process: runs over HTTP on the config's store and hooks, a server
//! killed mid-run loses nothing, SIGTERM leaves runs for the next start, and it refuses to
//! listen beyond this machine without a token.

use crate::common::Project;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const CONFIG: &str = r#"
[agents.worker]
model = "scripted:turns.json"
tools = ["Bash", "Write"]

[tools.Bash]
approval = false

[hooks.tool_policy]
deny = ["Write"]

[store]
lease_ttl = "1s"
"#;

/// A Write call the policy blocks, then two slow Bash calls, then an answer.
fn turns() -> Value {
    json!([
        {"tool_calls": [{"name": "Write", "input": {"file_path": "x.txt", "content": "no"}}]},
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo one >> marks; sleep 2"}}]},
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo two >> marks; sleep 1"}}]},
        {"text": "Finished."}
    ])
}

/// `agentry serve` on a free port of 127.0.0.1, and its base URL.
fn serve(p: &Project) -> (Child, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .current_dir(p.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("AGENTRY_HOME", p.home())
        .env("NO_COLOR", "1")
        .env_remove("AGENTRY_SERVER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentry serve starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://") && !w.contains("/openapi"))
        .unwrap_or_else(|| panic!("no address in: {line}"))
        .trim_end_matches([';', ','])
        .to_owned();
    assert!(
        line.contains(&format!("the inspector: {url}/;")),
        "the first line names the inspector: {line}"
    );
    // Keep reading stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, url)
}

async fn post(url: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

/// Reads `url`'s events after `after` until `stop` says so or the stream ends.
async fn events(
    url: &str,
    after: Option<&str>,
    stop: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, String, Value)> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(after) = after {
        request = request.header("Last-Event-ID", after);
    }
    let mut stream = request.send().await.unwrap().bytes_stream().eventsource();
    let mut seen = Vec::new();
    let read = async {
        while let Some(Ok(e)) = stream.next().await {
            let data: Value = serde_json::from_str(&e.data).unwrap();
            let done = stop(&e.event, &data);
            seen.push((e.id, e.event, data));
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("events within 30 s");
    seen
}

async fn status(base: &str, run_id: &str, want: &str) -> Value {
    for _ in 0..300 {
        if let Ok(r) = reqwest::get(format!("{base}/v1/runs/{run_id}")).await {
            let v: Value = r.json().await.unwrap_or(Value::Null);
            if v["status"] == want {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {run_id} never became {want}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_loses_nothing_and_hooks_apply_to_http_runs() {
    let p = Project::new(CONFIG, turns());
    let (mut first, base) = serve(&p);
    // The inspector is part of the binary.
    let page = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("/inspector/app.js"));
    let run = post(&format!("{base}/v1/runs"), json!({"input": "work"})).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let url = format!("{base}/v1/runs/{run_id}/events");
    // Up to the first Bash call: before it, the Write the policy blocks (the hook ran on a run
    // started over HTTP as it does on `agentry run`).
    let before = events(&url, None, |kind, data| {
        kind == "tool_started" && data["name"] == "Bash"
    })
    .await;
    let blocked = before.iter().any(|(_, kind, data)| {
        kind == "hook_decision" && data["decision"] == "blocked" && data["tool"] == "Write"
    });
    assert!(blocked, "no blocked Write in {before:?}");
    // Kill the server outright while the Bash call runs.
    while !p.file("marks").exists() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill().unwrap();
    first.wait().unwrap();

    let (mut second, base2) = serve(&p);
    let done = status(&base2, &run_id, "finished").await;
    assert_eq!(done["text"], "Finished.");
    // Priced as `agentry run` prices it: scripted turns run here and cost nothing.
    assert_eq!(done["cost_usd"], 0.0, "{done}");
    let marks = std::fs::read_to_string(p.file("marks")).unwrap();
    assert!(
        marks.lines().filter(|l| *l == "two").count() == 1,
        "{marks}"
    );
    // The stream goes on after the last event the first server sent, at the second one.
    let last = before.last().unwrap().0.clone();
    let rest = events(
        &format!("{base2}/v1/runs/{run_id}/events"),
        Some(&last),
        |_, _| false,
    )
    .await;
    assert_eq!(rest.last().unwrap().1, "run_finished");
    let ids: Vec<&String> = before
        .iter()
        .chain(&rest)
        .map(|(id, ..)| id)
        .filter(|id| !id.contains('.'))
        .collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "an event came twice");
    second.kill().unwrap();
    second.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_leaves_runs_under_way_for_the_next_start() {
    let p = Project::new(CONFIG, turns());
    let (first, base) = serve(&p);
    let run = post(&format!("{base}/v1/runs"), json!({"input": "work"})).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    while !p.file("marks").exists() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || first.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);

    // Left running, its lease released: the next server resumes it at once, and the call
    // that was cut off runs again.
    let (mut second, base2) = serve(&p);
    let done = status(&base2, &run_id, "finished").await;
    assert_eq!(done["text"], "Finished.");
    // Priced as `agentry run` prices it: scripted turns run here and cost nothing.
    assert_eq!(done["cost_usd"], 0.0, "{done}");
    let marks = std::fs::read_to_string(p.file("marks")).unwrap();
    assert_eq!(marks, "one\none\ntwo\n");
    second.kill().unwrap();
    second.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_ends_a_session_and_its_session_end_hooks_run() {
    let config = r#"
[agents.worker]
model = "scripted:turns.json"

[[hooks.events.SessionEnd]]
hooks = [{ type = "command", command = "jq -r '.session_id + \" \" + .reason' >> ends.txt" }]
"#;
    let p = Project::new(config, json!([{"text": "Hi."}]));
    let (mut server, base) = serve(&p);
    let run = post(
        &format!("{base}/v1/sessions/chat-7/runs"),
        json!({"input": "hello", "wait": true}),
    )
    .await;
    assert_eq!(run["text"], "Hi.");
    let end = |session: &str, body: Value| {
        let url = format!("{base}/v1/sessions/{session}/end");
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(end("chat-7", json!({"reason": "logout"})).await, 204);
    assert_eq!(end("nobody", json!({})).await, 404);
    assert_eq!(
        std::fs::read_to_string(p.file("ends.txt")).unwrap(),
        "chat-7 logout\n"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn beyond_this_machine_it_refuses_to_start_without_a_token() {
    let p = Project::new(CONFIG, turns());
    let out = p
        .agentry()
        .env_remove("AGENTRY_SERVER_TOKEN")
        .args(["serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to serve on 0.0.0.0:0 without a token"),
        "{stderr}"
    );
}
