//! `[telemetry]`: every run's GenAI spans exported over OTLP/HTTP (protobuf) to a receiver that
//! decodes them with the official OpenTelemetry protobuf definitions (Python's
//! `opentelemetry-proto`, found through `AGENTRY_TEST_PYTHON`; without it the test is skipped, and
//! under CI=true it fails).

use crate::common::Project;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The OTLP receiver: it writes each span it decodes as a JSON line to `spans`.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) port: u16,
    pub(crate) spans: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The receiver, or `None` (skipped) when Python with opentelemetry-proto is not there.
pub(crate) fn receiver(dir: &std::path::Path) -> Option<Receiver> {
    let python = std::env::var_os("AGENTRY_TEST_PYTHON").map(PathBuf::from);
    let usable = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .status()
            .is_ok_and(|s| s.success())
    });
    if !usable {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "AGENTRY_TEST_PYTHON with opentelemetry-proto is needed; `bash .ci/run` installs it"
        );
        eprintln!("SKIPPED: set AGENTRY_TEST_PYTHON to a Python with opentelemetry-proto");
        return None;
    }
    let spans = dir.join("spans.jsonl");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_receiver.py");
    let mut child = Command::new(python.unwrap())
        .arg(script)
        .arg(&spans)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the receiver prints its port");
    Some(Receiver { child, port, spans })
}

/// The spans received, once there are `at_least` (or after 10 s).
pub(crate) fn spans(r: &Receiver, at_least: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found: Vec<Value> = std::fs::read_to_string(&r.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if found.len() >= at_least || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_run_s_spans_reach_the_otlp_endpoint_with_the_genai_names() {
    let dir = tempfile::tempdir().unwrap();
    let Some(r) = receiver(dir.path()) else {
        return;
    };
    let config = format!(
        r#"
[agents.traced]
model = "scripted:turns.json"
tools = ["Read"]

[telemetry]
otlp_endpoint = "http://127.0.0.1:{}"
service_name = "agentry-test"
headers = {{ Authorization = "Bearer ${{OTLP_TOKEN}}" }}
"#,
        r.port
    );
    let p = Project::new(
        &config,
        json!([
            {"tool_calls": [{"name": "Read", "input": {"file_path": "agentry.toml"}}]},
            {"text": "Read it."}
        ]),
    );
    let out = p
        .agentry()
        .env("OTLP_TOKEN", "s3cret")
        .args(["run", "read the config"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exported when the command ends: the run, two steps, two model calls and a tool call.
    let spans = spans(&r, 6);
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    let count = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count();
    assert_eq!(count("invoke_agent"), 1, "{names:?}");
    assert_eq!(count("chat"), 2, "{names:?}");
    assert_eq!(count("execute_tool"), 1, "{names:?}");
    let tool = spans
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("execute_tool"))
        .unwrap();
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "Read");
    let run = spans
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
        .unwrap();
    assert_eq!(run["attributes"]["gen_ai.agent.name"], "traced");
    // One trace, rooted at the run.
    assert!(
        spans.iter().all(|s| s["trace_id"] == run["trace_id"]),
        "{spans:?}"
    );
    assert_eq!(run["parent"], "");
    for s in &spans {
        assert_eq!(s["path"], "/v1/traces");
        assert_eq!(s["content_type"], "application/x-protobuf");
        assert_eq!(s["authorization"], "Bearer s3cret");
        assert_eq!(s["service"], "agentry-test");
    }
    p.agentry()
        .args(["hooks", "list"])
        .assert()
        .stdout(predicates::str::contains(
            "telemetry: GenAI spans of every run",
        ));
}

#[test]
fn an_endpoint_that_cannot_be_reached_is_a_warning_naming_it_and_the_run_goes_on() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!(
        "[agents.traced]\nmodel = \"scripted:turns.json\"\n\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\n"
    );
    let p = Project::new(&config, json!([{"text": "Done."}]));
    let out = p.agentry().args(["run", "go"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Done."));
    assert!(
        stderr.contains("warning: telemetry: spans could not be exported to")
            && stderr.contains(&format!("127.0.0.1:{port}")),
        "{stderr}"
    );
}
