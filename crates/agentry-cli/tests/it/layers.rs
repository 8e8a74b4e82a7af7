//! The config in layers: the user's config under the project's file, `-c key=value` and
//! `--model`/`--max-steps` over both; the user's store when there is no project.

use crate::common::{Project, agentry_in};
use predicates::prelude::*;
use serde_json::json;

const HELPER: &str = "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\"]\n\n[tools.Bash]\napproval = false\n";

/// Two turns: a tool call, then the answer (a run limited to one step stops before it).
fn two_steps() -> serde_json::Value {
    json!([
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo step"}}]},
        {"text": "Done in two."}
    ])
}

#[test]
fn the_user_config_lies_under_the_project_file() {
    let p = Project::new(HELPER, two_steps());
    std::fs::create_dir_all(p.home()).unwrap();
    // The user's config limits every agent named helper to one step, and names a default
    // agent the project does not declare... which the project's own file overrides.
    std::fs::write(
        p.home().join("config.toml"),
        "[agents.helper]\nmax_steps = 1\ninstructions = \"from the user's config\"\n",
    )
    .unwrap();
    let (lines, code) = p.json(&["config", "check"]);
    assert_eq!(code, 0, "{lines:?}");
    let layers = lines[0]["layers"].as_array().unwrap();
    assert!(
        layers[0].as_str().unwrap().ends_with("config.toml"),
        "{lines:?}"
    );
    // Merged: the project's model and tools, the user's step limit.
    p.agentry()
        .args(["run", "go"])
        .assert()
        .code(4)
        .stdout(predicate::str::contains("Done in two.").not());
    // The project's file wins where both set a key.
    std::fs::write(
        p.file("agentry.toml"),
        format!(
            "{HELPER}\n[agents.helper.compaction]\nstrategy = \"window\"\nthreshold = 100000\n"
        )
        .replace("tools = [\"Bash\"]", "tools = [\"Bash\"]\nmax_steps = 5"),
    )
    .unwrap();
    p.agentry()
        .args(["run", "go"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Done in two."));
}

#[test]
fn a_bad_user_config_is_located_in_its_own_file() {
    let p = Project::new(HELPER, two_steps());
    std::fs::create_dir_all(p.home()).unwrap();
    std::fs::write(
        p.home().join("config.toml"),
        "[agents.helper]\nmodle = \"x\"\n",
    )
    .unwrap();
    p.agentry()
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "config.toml:2:1: unknown field `modle`",
        ));
}

#[test]
fn dash_c_sets_a_key_for_one_command() {
    let p = Project::new(HELPER, two_steps());
    p.agentry()
        .args(["-c", "agents.helper.max_steps=1", "run", "go"])
        .assert()
        .code(4);
    p.agentry()
        .args(["run", "go"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Done in two."));
    // A TOML value, a string fallback, and a mistake named with the override.
    p.agentry()
        .args(["-c", "agents.helper.tools=[\"Read\"]", "config", "check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("tools Read\n"));
    p.agentry()
        .args(["-c", "agents.helper.max_step=1", "config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-c agents.helper.max_step=1"))
        .stderr(predicate::str::contains("unknown field `max_step`"));
    // `-c FILE` still names the config file.
    std::fs::write(
        p.file("other.toml"),
        "[agents.other]\nmodel = \"scripted:turns.json\"\n",
    )
    .unwrap();
    p.agentry()
        .args(["-c", "other.toml", "config", "check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("agent other (default)"));
}

#[test]
fn model_and_max_steps_flags_change_the_agent_for_one_run() {
    let p = Project::new(HELPER, two_steps());
    std::fs::write(
        p.file("other.json"),
        json!([{"text": "From the other script."}]).to_string(),
    )
    .unwrap();
    p.agentry()
        .args(["run", "--model", "scripted:other.json", "go"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("From the other script."));
    p.agentry()
        .args(["run", "--max-steps", "1", "go"])
        .assert()
        .code(4)
        .stdout(predicate::str::contains("step limit").or(predicate::str::contains("max_steps")));
    p.agentry()
        .args(["run", "--agent", "nobody", "--model", "local", "go"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no agent is named `nobody`"));
}

#[test]
fn without_a_project_runs_go_to_the_users_store() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join(".agentry-home");
    let out = agentry_in(dir.path()).args(["runs"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("sqlite:{}", home.join("runs.db").display())),
        "{stdout}"
    );
    assert!(home.join("runs.db").is_file(), "the user's store exists");
    assert!(
        !dir.path().join(".agentry").exists(),
        "no store is left in the directory the command was typed in"
    );
}
