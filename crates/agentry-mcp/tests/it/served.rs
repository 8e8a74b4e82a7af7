//! agentry agents served over MCP on stdio (the `serve_agent` example), called by the official
//! Python `mcp` client: tools, progress, an approval the run waits for, cancellation.

use crate::common;

use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The `serve_agent` example's binary, built beside the tests.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("serve_agent")
}

#[test]
fn the_python_client_calls_served_agents() {
    let Some(python) = common::python("the_python_client_calls_served_agents") else {
        return;
    };
    let server = example();
    assert!(
        server.exists(),
        "{} is missing: build the examples (`cargo build -p agentry-mcp --examples`)",
        server.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let output = std::process::Command::new(python)
        .arg(common::script("../clients/call_agents.py"))
        .arg(&server)
        .env("AGENTRY_MCP_SERVE_LOG", &log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    let tools = lines[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["greeter", "janitor"]);
    assert_eq!(tools[0]["inputSchema"]["required"][0], "prompt");
    assert_eq!(
        tools[0]["description"],
        "Greets whoever the prompt names, loudly."
    );

    let greeter = &lines[1]["greeter"];
    assert_eq!(greeter["content"][0]["text"], "Done: ADA", "{greeter}");
    assert_ne!(greeter["isError"], true);
    let progress: Vec<&str> = lines[1]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        progress,
        [
            "step 1 started",
            "calling tool `shout`",
            "tool `shout` finished",
            "step 2 started"
        ]
    );

    let janitor = &lines[2]["janitor"];
    assert_ne!(
        janitor["isError"], true,
        "a pause is not an error: {janitor}"
    );
    let paused = &janitor["structuredContent"];
    assert_eq!(paused["status"], "awaiting_approval");
    assert!(!paused["run_id"].as_str().unwrap().is_empty());
    assert_eq!(paused["pending"][0]["tool"], "delete");
    assert!(
        janitor["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(paused["run_id"].as_str().unwrap()),
        "the text names the run id to resume"
    );

    assert_eq!(lines[3]["cancelled"], true);
    assert_eq!(lines[4]["after"]["content"][0]["text"], "Done: BOB");

    // The server's RunEnd hook saw every run end, the abandoned one cancelled.
    let deadline = Instant::now() + Duration::from_secs(5);
    let ends = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().count() >= 4 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ends: Vec<&str> = ends.lines().collect();
    assert!(ends.contains(&"greeter cancelled"), "{ends:?}");
    assert_eq!(
        ends.iter().filter(|l| l.starts_with("greeter ")).count(),
        3,
        "{ends:?}"
    );
    assert!(ends.iter().any(|l| l.starts_with("janitor ")), "{ends:?}");
}
