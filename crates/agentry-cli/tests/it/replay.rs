//! `agentry replay RUN`: a stored run run again with the config's hooks as they are now, its
//! recorded model turns played back and its recorded tool results given back, through the real
//! binary on a real SQLite store.

use crate::common::{Project, run_id};
use predicates::prelude::*;
use serde_json::{Value, json};

const CONFIG: &str = r#"
[agents.dev]
model = "scripted:turns.json"
tools = ["Bash", "Read", "Write"]

[tools.Bash]
approval = false
"#;

/// A project whose recorded run wrote a marker file with Bash, read a file and answered.
fn recorded() -> (Project, String) {
    let p = Project::new(
        CONFIG,
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> marker.txt"}}]},
            {"tool_calls": [{"name": "Read", "input": {"file_path": "agentry.toml"}}]},
            {"text": "Done."}
        ]),
    );
    let (lines, code) = p.json(&["run", "tidy up"]);
    assert_eq!(code, 0, "{lines:?}");
    let run = run_id(&lines);
    assert_eq!(
        std::fs::read_to_string(p.file("marker.txt")).unwrap(),
        "ran\n"
    );
    (p, run)
}

fn replay(p: &Project, run: &str) -> (Value, i32) {
    let (lines, code) = p.json(&["replay", run]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    (lines.into_iter().next().unwrap(), code)
}

fn set_config(p: &Project, extra: &str) {
    std::fs::write(p.file("agentry.toml"), format!("{CONFIG}\n{extra}")).unwrap();
}

#[test]
fn an_unchanged_config_replays_the_same_without_a_model_or_a_tool() {
    let (p, run) = recorded();
    // Other turns in the model file, and no marker: the replay calls neither the model nor
    // the tool.
    std::fs::write(
        p.file("turns.json"),
        json!([{"text": "Something else."}]).to_string(),
    )
    .unwrap();
    std::fs::remove_file(p.file("marker.txt")).unwrap();
    let (report, code) = replay(&p, &run);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["differences"], 0);
    assert_eq!(report["model_turns"], 3);
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c["same"] == true), "{report}");
    assert_eq!(
        calls[0]["replay"]["content"],
        calls[0]["recorded"]["content"]
    );
    assert_eq!(report["replay_end"], "final answer");
    assert!(!p.file("marker.txt").exists(), "the replay ran Bash");
    // Nothing was stored: the store still holds the one run.
    let (runs, _) = p.json(&["runs"]);
    assert_eq!(runs.len(), 1, "{runs:?}");
}

#[test]
fn a_new_policy_that_blocks_a_recorded_call_is_a_difference() {
    let (p, run) = recorded();
    set_config(&p, "[hooks.tool_policy]\ndeny = [\"Bash\"]\n");
    let (report, code) = replay(&p, &run);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["differences"], 1);
    let bash = &report["calls"][0];
    assert_eq!(bash["same"], false);
    assert_eq!(bash["recorded"]["decisions"], json!([]));
    let decision = bash["replay"]["decisions"][0].as_str().unwrap();
    assert!(
        decision.starts_with("blocked by tool-policy: the tool policy denies `Bash`"),
        "{decision}"
    );
    assert_eq!(bash["replay"]["is_error"], true);
    assert_eq!(report["calls"][1]["same"], true);

    p.agentry()
        .args(["replay", &run])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "→ Bash echo ran >> marker.txt   DIFFERS",
        ))
        .stdout(predicate::str::contains("recorded  ran → (no output)"))
        .stdout(predicate::str::contains("replay    blocked by tool-policy"))
        .stdout(predicate::str::contains("→ Read agentry.toml   same"))
        .stdout(predicate::str::contains("1 difference(s)"));
}

#[test]
fn a_command_hook_that_rewrites_the_input_is_a_difference() {
    let (p, run) = recorded();
    std::fs::write(
        p.file("quiet.sh"),
        "#!/bin/sh\ncat >/dev/null\nprintf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":\"true\"}}}'\n",
    )
    .unwrap();
    set_config(
        &p,
        "[[hooks.events.PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ type = \"command\", command = \"sh quiet.sh\" }]\n",
    );
    let (report, code) = replay(&p, &run);
    assert_eq!(code, 1, "{report}");
    let decisions = report["calls"][0]["replay"]["decisions"].to_string();
    assert!(decisions.contains("rewrote the input"), "{report}");
    assert!(decisions.contains("true"), "{report}");
}

#[test]
fn a_call_blocked_in_the_recording_that_the_replay_lets_through_gets_no_invented_result() {
    let p = Project::new(
        &format!("{CONFIG}\n[hooks.tool_policy]\ndeny = [\"Bash\"]\n"),
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> marker.txt"}}]},
            {"text": "Could not."}
        ]),
    );
    let (lines, _) = p.json(&["run", "try"]);
    let run = run_id(&lines);
    set_config(&p, "");
    let (report, code) = replay(&p, &run);
    assert_eq!(code, 1, "{report}");
    let bash = &report["calls"][0];
    assert!(
        bash["recorded"]["decisions"][0]
            .as_str()
            .unwrap()
            .starts_with("blocked by tool-policy")
    );
    assert_eq!(bash["replay"]["decisions"], json!([]));
    assert!(
        bash["replay"]["content"]
            .as_str()
            .unwrap()
            .contains("in the recorded run this call did not run"),
        "{report}"
    );
    assert!(!p.file("marker.txt").exists());
}

#[test]
fn an_approved_call_replays_as_approved() {
    let p = Project::new(
        CONFIG,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "hi"}}]},
            {"text": "Wrote it."}
        ]),
    );
    let (lines, code) = p.json(&["run", "write"]);
    assert_eq!(code, 3, "{lines:?}");
    let run = run_id(&lines);
    let (lines, code) = p.json(&["approve", &run]);
    assert_eq!(code, 0, "{lines:?}");
    std::fs::remove_file(p.file("out.txt")).unwrap();
    let (report, code) = replay(&p, &run);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["calls"][0]["same"], true);
    assert!(!p.file("out.txt").exists(), "the replay ran Write");
}

#[test]
fn an_unknown_run_is_an_error_that_says_where_to_look() {
    let (p, _) = recorded();
    p.agentry()
        .args(["replay", "no-such-run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("agentry runs"));
}
