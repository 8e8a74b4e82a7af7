//! An agent served on stdio whatever its stdin and stdout are: pipes (the other served tests),
//! Unix sockets (how Node's `child_process` connects a child's stdio), and plain files (no
//! polling possible: tokio's stdin and stdout). The `serve_agent` example answers a client's
//! initialize, tools/list and tools/call on each.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The `serve_agent` example's binary, built beside the tests.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join("examples").join("serve_agent");
    assert!(
        path.exists(),
        "{} is missing: build the examples (`cargo build -p agentry-mcp --examples`)",
        path.display()
    );
    path
}

/// Whether the open file behind `fd` is in non-blocking mode.
fn non_blocking(fd: &impl std::os::fd::AsFd) -> bool {
    let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    nix::fcntl::OFlag::from_bits_truncate(flags).contains(nix::fcntl::OFlag::O_NONBLOCK)
}

/// What a client sends: initialize, initialized, tools/list, and a call of the greeter.
fn requests() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "greeter", "arguments": {"prompt": "ada"}}}),
    ]
}

/// The answers to requests 1, 2 and 3 among `lines`, checked.
fn check_answers(lines: &[Value]) {
    let answer = |id: i64| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id} in {lines:?}"))
    };
    assert!(answer(1)["result"]["serverInfo"].is_object(), "{lines:?}");
    let tools: Vec<&str> = answer(2)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["greeter", "janitor"]);
    assert_eq!(
        answer(3)["result"]["content"][0]["text"],
        "Done: ADA",
        "{lines:?}"
    );
}

#[test]
fn an_agent_is_served_on_unix_sockets() {
    let (stdin_ours, stdin_theirs) = UnixStream::pair().unwrap();
    let (stdout_ours, stdout_theirs) = UnixStream::pair().unwrap();
    // The child's stdin shares its open file, and so its mode, with this handle.
    let probe = stdin_theirs.try_clone().unwrap();
    let mut child = Command::new(example())
        .stdin(Stdio::from(OwnedFd::from(stdin_theirs)))
        .stdout(Stdio::from(OwnedFd::from(stdout_theirs)))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    stdout_ours
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut to = stdin_ours;
    let mut from = BufReader::new(stdout_ours);
    let mut lines = Vec::new();
    for request in requests() {
        writeln!(to, "{request}").unwrap();
        if request.get("id").is_none() {
            continue;
        }
        // Progress notifications may come before the answer.
        loop {
            let mut line = String::new();
            from.read_line(&mut line)
                .expect("the server answers within 30 s");
            let message: Value = serde_json::from_str(&line).unwrap();
            let answered = message["id"] == request["id"];
            lines.push(message);
            if answered {
                break;
            }
        }
    }
    check_answers(&lines);
    assert!(
        non_blocking(&probe),
        "the server polls its stdin socket in non-blocking mode"
    );
    drop(to);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the server exits cleanly at the end of its input: {status}"
    );
    assert!(
        !non_blocking(&probe),
        "the server put its stdin back in blocking mode when it stopped serving"
    );
}

#[test]
fn an_agent_is_served_on_plain_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let output = dir.path().join("out.jsonl");
    let text: String = requests().iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let status = Command::new(example())
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::inherit())
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let lines: Vec<Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    check_answers(&lines);
}
