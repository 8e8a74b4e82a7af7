//! Sessions from the terminal: `run --continue`, and `chat` with its slash commands.

use crate::common::Project;
use predicates::prelude::*;
use serde_json::json;

const HELPER: &str = "[agents.helper]\nmodel = \"scripted:turns.json\"\n";

/// A scripted model whose answer depends on how much conversation it sees: the first turn of a
/// session says hello, a second one remembers.
fn remembering() -> serde_json::Value {
    json!([{"text": "Hi Ann."}, {"text": "Your name is Ann."}])
}

#[test]
fn run_continue_takes_up_the_latest_session() {
    let p = Project::new(HELPER, remembering());
    let (first, code) = p.json(&["run", "my name is Ann"]);
    assert_eq!(code, 0);
    let session = first.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!session.is_empty(), "every run has a session");
    let (again, code) = p.json(&["run", "--continue", "what is my name?"]);
    assert_eq!(code, 0, "{again:?}");
    let result = again.last().unwrap();
    assert_eq!(result["session_id"], session.as_str());
    assert_eq!(result["output"], "Your name is Ann.");
    // Without --continue, a new session: the model sees no earlier turn.
    p.agentry()
        .args(["run", "what is my name?"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Hi Ann."));
}

#[test]
fn run_continue_without_a_session_says_so() {
    let p = Project::new(HELPER, remembering());
    p.agentry()
        .args(["run", "--continue", "hello"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "no session of agent `helper` to continue",
        ));
}

#[test]
fn chat_takes_slash_commands_between_turns() {
    let p = Project::new(HELPER, remembering());
    let out = p
        .agentry()
        .arg("chat")
        .write_stdin(
            "my name is Ann\n/cost\n/model\n/clear\nwho am I?\n/nonsense\n/exit\nnever sent\n",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // /clear started a new conversation: the model saw no earlier turn.
    assert_eq!(stdout.matches("Hi Ann.").count(), 2, "{stdout}");
    assert!(!stdout.contains("Your name is Ann."), "{stdout}");
    assert!(stderr.contains("1 turn · 0 tokens"), "/cost: {stderr}");
    assert!(
        stderr.contains("model: scripted:turns.json"),
        "/model: {stderr}"
    );
    assert!(
        stderr.contains("a new conversation: session"),
        "/clear: {stderr}"
    );
    assert!(stderr.contains("/nonsense is not a command"), "{stderr}");
    let (runs, _) = p.json(&["runs"]);
    assert_eq!(
        runs.len(),
        2,
        "/exit ended the chat before the last line: {runs:?}"
    );
    // Without /clear, the second turn continues the first.
    p.agentry()
        .arg("chat")
        .write_stdin("my name is Ann\nwho am I?\n")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Your name is Ann."));
}

#[test]
fn chat_model_switches_from_the_next_turn() {
    let p = Project::new(HELPER, remembering());
    std::fs::write(
        p.file("other.json"),
        json!([{"text": "unused"}, {"text": "Other model here."}]).to_string(),
    )
    .unwrap();
    p.agentry()
        .arg("chat")
        .write_stdin("hello\n/model scripted:other.json\nhello again\n")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Hi Ann."))
        .stdout(predicate::str::contains("Other model here."));
}

#[test]
fn clear_ends_the_session_and_the_next_one_starts_as_cleared() {
    let config = format!(
        "{HELPER}\n[[hooks.events.SessionStart]]\nhooks = [{{ type = \"command\", command = \"jq -r '\\\"start \\\" + .source' >> sessions.log\" }}]\n\n[[hooks.events.SessionEnd]]\nhooks = [{{ type = \"command\", command = \"jq -r '\\\"end \\\" + .reason' >> sessions.log\" }}]\n"
    );
    let p = Project::new(&config, remembering());
    p.agentry()
        .arg("chat")
        .write_stdin("hello\n/clear\nhello again\n")
        .assert()
        .code(0);
    let log = std::fs::read_to_string(p.file("sessions.log")).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "start startup",
            "end clear",
            "start clear",
            "end prompt_input_exit"
        ],
        "{log}"
    );
    // A plain run is a session of its own, which ends as the command exits.
    std::fs::remove_file(p.file("sessions.log")).unwrap();
    p.agentry().args(["run", "hi"]).assert().code(0);
    let log = std::fs::read_to_string(p.file("sessions.log")).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["start startup", "end other"],
        "{log}"
    );
}

#[test]
fn verbose_logs_each_event_on_stderr_and_quiet_logs_nothing() {
    let p = Project::new(HELPER, remembering());
    let out = p
        .agentry()
        .args(["--verbose", "run", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("DEBUG agentry::run"), "{stderr}");
    assert!(stderr.contains("\"type\":\"run_started\""), "{stderr}");
    let out = p.agentry().args(["run", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("DEBUG"), "{stderr}");
}

#[test]
fn chat_compact_compacts_before_the_next_message_as_a_manual_compaction() {
    let config = "[agents.helper]\nmodel = \"scripted:turns.json\"\ncompaction = { strategy = \"window\", threshold = 100000, keep_recent = 1 }\n\n[[hooks.events.PreCompact]]\nhooks = [{ type = \"command\", command = \"jq -r .trigger >> compact.log\" }]\n";
    let p = Project::new(config, remembering());
    p.agentry()
        .arg("chat")
        .write_stdin("my name is Ann\nwho am I?\n/compact\nand now?\n")
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "compacted before your next message",
        ));
    let log = std::fs::read_to_string(p.file("compact.log")).unwrap();
    assert_eq!(log, "manual\n", "once, asked for: {log}");
    // An agent that does not compact says how to make it.
    let p = Project::new(HELPER, remembering());
    p.agentry()
        .arg("chat")
        .write_stdin("/compact\n")
        .assert()
        .code(0)
        .stderr(predicate::str::contains("[agents.helper.compaction]"));
}
