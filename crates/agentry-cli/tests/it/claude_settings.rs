//! Claude Code settings spread over several files, through the real binary: the files of one
//! `[hooks]` table are one set of hooks per event, as Claude Code merges its settings sources.

use crate::common::Project;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

const CONFIG: &str = r#"
[agents.helper]
model = "scripted:turns.json"
tools = ["Bash"]

[hooks]
settings_files = [".claude/settings.json", ".claude/settings.local.json", "team/hooks.json"]
"#;

/// Writes an executable script at `rel` in the project.
fn script(p: &Project, rel: &str, body: &str) {
    let path = p.file(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Writes the settings file `rel` with one handler running `command` on `event`.
fn settings(p: &Project, rel: &str, event: &str, command: &str) {
    let path = p.file(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let value = json!({"hooks": {event: [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}});
    std::fs::write(path, value.to_string()).unwrap();
}

#[test]
fn a_deny_in_one_file_wins_over_an_ask_and_an_allow_in_others() {
    let p = Project::new(
        CONFIG,
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> ran.txt"}}]},
            {"text": "Could not."}
        ]),
    );
    let answer = |decision: &str| {
        format!(
            "#!/bin/sh\necho '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"{decision}\", \"permissionDecisionReason\": \"{decision} said so\"}}}}'\n"
        )
    };
    // Each file alone would ask, deny and allow; in any order, the deny stands.
    script(&p, "hooks/ask.sh", &answer("ask"));
    script(
        &p,
        "hooks/deny.sh",
        "#!/bin/sh\necho 'no shell for you' >&2\nexit 2\n",
    );
    script(&p, "hooks/allow.sh", &answer("allow"));
    settings(&p, ".claude/settings.json", "PreToolUse", "./hooks/ask.sh");
    settings(
        &p,
        ".claude/settings.local.json",
        "PreToolUse",
        "./hooks/deny.sh",
    );
    settings(&p, "team/hooks.json", "PreToolUse", "./hooks/allow.sh");
    let (lines, code) = p.json(&["run", "try"]);
    assert_eq!(code, 0, "{lines:?}");
    assert!(!p.file("ran.txt").exists(), "the call never ran");
    assert!(
        !lines.iter().any(|l| l["type"] == "awaiting_approval"),
        "nobody is asked to approve a call a hook forbids: {lines:?}"
    );
    let finished = lines.iter().find(|l| l["type"] == "tool_finished").unwrap();
    let content = finished["result"]["content"].as_str().unwrap();
    assert!(content.contains("no shell for you"), "{content}");
    assert_eq!(lines.last().unwrap()["output"], "Could not.");
}

#[test]
fn two_stop_guards_in_two_files_both_have_their_reasons_heard_and_a_failure_names_its_file() {
    let p = Project::new(
        CONFIG,
        json!([
            {"text": "Done."},
            {"text": "Done, with tests and docs."}
        ]),
    );
    let guard = |reason: &str| {
        format!(
            "#!/bin/sh\nif [ \"$(jq -r .stop_hook_active)\" = true ]; then exit 0; fi\necho '{{\"decision\": \"block\", \"reason\": \"{reason}\"}}'\n"
        )
    };
    script(&p, "hooks/tests.sh", &guard("run the tests"));
    script(&p, "hooks/docs.sh", &guard("update the docs"));
    settings(&p, ".claude/settings.json", "Stop", "./hooks/tests.sh");
    settings(&p, ".claude/settings.local.json", "Stop", "./hooks/docs.sh");
    // A third file's handler that cannot start: reported, naming its file; the run goes on.
    settings(&p, "team/hooks.json", "Stop", "./hooks/missing.sh");
    let (lines, code) = p.json(&["run", "finish"]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(
        lines.last().unwrap()["output"],
        "Done, with tests and docs."
    );
    let feedback: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .filter_map(|l| l["message"]["content"].as_str())
        .collect();
    let heard = feedback.join("\n");
    assert!(
        heard.contains("run the tests") && heard.contains("update the docs"),
        "both guards are heard: {feedback:?}"
    );
    let failed: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "hook_failed")
        .collect();
    assert!(!failed.is_empty(), "{lines:?}");
    for f in failed {
        let hook = f["hook"].as_str().unwrap();
        assert_eq!(hook, "./hooks/missing.sh (team/hooks.json)");
        assert!(f["error"].as_str().unwrap().contains("status 127"), "{f}");
    }
}

#[test]
fn the_tool_policys_allow_list_runs_bash_without_asking_and_its_approval_rule_still_asks() {
    let turns = json!([
        {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> ran.txt"}}]},
        {"text": "Ran it."}
    ]);
    let allowing = "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\"]\n\n[hooks.tool_policy]\nallow = [\"Bash\"]\n";
    let p = Project::new(allowing, turns.clone());
    let (lines, code) = p.json(&["run", "go"]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(std::fs::read_to_string(p.file("ran.txt")).unwrap(), "ran\n");
    let allowed = lines
        .iter()
        .find(|l| l["type"] == "hook_decision" && l["decision"] == "allowed")
        .unwrap_or_else(|| panic!("the allow is recorded: {lines:?}"));
    assert!(
        allowed["detail"]
            .as_str()
            .unwrap()
            .contains("tool policy allows `Bash`"),
        "{allowed}"
    );
    // The same allow with an approval rule: the rule asks.
    let asking = format!("{allowing}require_approval = [\"Bash\"]\n");
    let p = Project::new(&asking, turns);
    let (lines, code) = p.json(&["run", "go"]);
    assert_eq!(code, 3, "waits for approval: {lines:?}");
    assert!(!p.file("ran.txt").exists());
}

#[test]
fn stop_fires_once_when_the_agent_finishes_not_when_it_pauses_for_approval() {
    let config = "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Write\"]\n\n[hooks]\nsettings_files = [\".claude/settings.json\"]\n";
    let p = Project::new(
        config,
        json!([
            {"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "yes"}}]},
            {"text": "Wrote it."}
        ]),
    );
    script(
        &p,
        "hooks/count.sh",
        "#!/bin/sh\ncat > /dev/null\necho stop >> \"$CLAUDE_PROJECT_DIR/stops.txt\"\n",
    );
    settings(&p, ".claude/settings.json", "Stop", "./hooks/count.sh");
    let stops = || {
        std::fs::read_to_string(p.file("stops.txt"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let (lines, code) = p.json(&["run", "write it"]);
    assert_eq!(code, 3, "paused for approval: {lines:?}");
    assert_eq!(stops(), 0, "a pause is not the end of the agent's response");
    let run = crate::common::run_id(&lines);
    let (lines, code) = p.json(&["approve", &run]);
    assert_eq!(code, 0, "{lines:?}");
    assert_eq!(lines.last().unwrap()["output"], "Wrote it.");
    assert_eq!(stops(), 1, "Stop fired once, at the final answer");
}

#[test]
fn a_plugins_hooks_run_as_installed_in_exec_and_shell_form() {
    let config = "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\"]\n\n[tools.Bash]\napproval = false\n\n[hooks]\nplugins = [\"vendor/safety\"]\n";
    let p = Project::new(
        config,
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "rm -rf build"}}]},
            {"text": "Stopped."}
        ]),
    );
    let home = tempfile::tempdir().unwrap();
    // Exec form: the plugin root substituted into the argument; shell form: the variables set.
    script(
        &p,
        "vendor/safety/scripts/guard.sh",
        "#!/bin/sh\ncase \"$(cat)\" in *'rm -rf'*) echo \"refused by $(basename \"$CLAUDE_PLUGIN_ROOT\")\" >&2; exit 2;; esac\n",
    );
    script(
        &p,
        "vendor/safety/scripts/log.sh",
        "#!/bin/sh\ncat > /dev/null\necho \"$CLAUDE_PLUGIN_DATA\" > \"$CLAUDE_PROJECT_DIR/data-dir.txt\"\n",
    );
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/scripts/guard.sh"]},
        {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}\"/scripts/log.sh"}
    ]}]}});
    std::fs::create_dir_all(p.file("vendor/safety/hooks")).unwrap();
    std::fs::write(p.file("vendor/safety/hooks/hooks.json"), hooks.to_string()).unwrap();
    let out = p
        .agentry()
        .env("AGENTRY_HOME", home.path())
        .args(["--json", "run", "clean"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("refused by safety"), "{stdout}");
    let data = std::fs::read_to_string(p.file("data-dir.txt")).unwrap();
    let expected = home.path().join("plugins/data/safety");
    assert_eq!(data.trim(), expected.display().to_string());
    assert!(expected.is_dir(), "the plugin's data directory exists");
}

#[test]
fn a_plugin_variable_outside_a_plugin_is_a_config_error() {
    let config = "[agents.helper]\nmodel = \"scripted:turns.json\"\n\n[hooks]\nsettings_files = [\".claude/settings.json\"]\n";
    let p = Project::new(config, json!([]));
    settings(
        &p,
        ".claude/settings.json",
        "PreToolUse",
        "${CLAUDE_PLUGIN_ROOT}/scripts/guard.sh",
    );
    let out = p.agentry().args(["config", "check"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("CLAUDE_PLUGIN_ROOT") && stderr.contains("plugins = "),
        "{stderr}"
    );
}

#[test]
fn every_runs_hooks_and_an_agents_own_are_one_set() {
    // Every run's table asks; the agent's own table denies; both count the calls they see.
    let config = r#"
[agents.helper]
model = "scripted:turns.json"
tools = ["Bash"]

[[agents.helper.hooks.events.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "echo agent >> seen.txt; echo 'not in this agent' >&2; exit 2" }]

[[hooks.events.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "echo every >> seen.txt; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\"}}'" }]

[[hooks.events.UserPromptSubmit]]
hooks = [{ type = "command", command = "echo prompt >> prompts.txt" }]
"#;
    let p = Project::new(
        config,
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "echo ran >> ran.txt"}}]},
            {"text": "Could not."}
        ]),
    );
    let (lines, code) = p.json(&["run", "go"]);
    assert_eq!(code, 0, "the deny stands, no one is asked: {lines:?}");
    assert!(!p.file("ran.txt").exists());
    let seen = std::fs::read_to_string(p.file("seen.txt")).unwrap();
    let mut seen: Vec<&str> = seen.lines().collect();
    seen.sort();
    assert_eq!(seen, ["agent", "every"], "each handler once");
    let prompts = std::fs::read_to_string(p.file("prompts.txt")).unwrap();
    assert_eq!(prompts.lines().count(), 1, "every run's hook fires once");
    // `hooks list` shows the agent's one set.
    let out = p.agentry().args(["hooks", "list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("command hooks of hooks.events, agents.helper.hooks.events"),
        "{listed}"
    );
}

#[test]
fn plugins_enabled_in_settings_load_from_where_claude_code_installed_them() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\"]\n\n[hooks]\nsettings_files = [\".claude/settings.json\", \".claude/settings.local.json\"]\n",
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "rm -rf build"}}]},
            {"text": "Done."}
        ]),
    );
    let claude = tempfile::tempdir().unwrap();
    let plugins = claude.path().join("plugins");
    // `safety@tools`, recorded in installed_plugins.json (its directory named by version).
    let safety = plugins.join("cache/tools/safety/1.4.0");
    std::fs::create_dir_all(safety.join(".claude-plugin")).unwrap();
    std::fs::write(
        safety.join(".claude-plugin/plugin.json"),
        json!({"name": "safety", "version": "1.4.0"}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(safety.join("hooks")).unwrap();
    std::fs::write(
        safety.join("hooks/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo \"$(basename \"$CLAUDE_PLUGIN_DATA\") refused it\" >&2; exit 2"}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        plugins.join("installed_plugins.json"),
        json!({"version": 2, "plugins": {"safety@tools": [
            {"scope": "user", "installPath": safety, "version": "1.4.0"}
        ]}})
        .to_string(),
    )
    .unwrap();
    // `audit@tools`, only in the cache: enabled by the project, disabled by the local file.
    let audit = plugins.join("cache/tools/audit/0.1.0/hooks");
    std::fs::create_dir_all(&audit).unwrap();
    std::fs::write(
        audit.join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR/audited\""}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(p.file(".claude")).unwrap();
    std::fs::write(
        p.file(".claude/settings.json"),
        json!({"enabledPlugins": {"safety@tools": true, "audit@tools": true, "missing@tools": true}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        p.file(".claude/settings.local.json"),
        json!({"enabledPlugins": {"audit@tools": false}}).to_string(),
    )
    .unwrap();
    let out = p
        .agentry()
        .env("CLAUDE_CONFIG_DIR", claude.path())
        .args(["--json", "run", "clean"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("safety refused it"),
        "the manifest's name: {stdout}"
    );
    assert!(
        !p.file("audited").exists(),
        "a plugin the local file disables"
    );
    assert!(
        stderr.contains("plugin missing@tools is enabled") && stderr.contains("not installed"),
        "{stderr}"
    );
}

#[test]
fn scripts_find_claude_codes_directories_as_it_leaves_them() {
    let p = Project::new(
        "[agents.helper]\nmodel = \"scripted:turns.json\"\ntools = [\"Bash\"]\n\n[tools.Bash]\napproval = false\n\n[hooks]\nsettings_files = [\"app/.claude/settings.json\"]\n",
        json!([
            {"tool_calls": [{"name": "Bash", "input": {"command": "true"}}]},
            {"text": "Done."}
        ]),
    );
    // A script that appends to a log under ~/.claude, and says where the project is.
    settings(
        &p,
        "app/.claude/settings.json",
        "PreToolUse",
        "echo ran >> ~/.claude/hook.log; pwd > \"$CLAUDE_PROJECT_DIR/where.txt\"",
    );
    let home = tempfile::tempdir().unwrap();
    let out = p
        .agentry()
        .env("HOME", home.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .args(["--json", "run", "go"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = std::fs::read_to_string(home.path().join(".claude/hook.log")).unwrap();
    assert_eq!(log, "ran\n");
    // The project is the directory holding `.claude`: the commands run there.
    let app = std::fs::canonicalize(p.file("app")).unwrap();
    let wd = std::fs::read_to_string(p.file("app/where.txt")).unwrap();
    assert_eq!(std::path::Path::new(wd.trim()), app);
}
