//! Scripts that misbehave: non-zero statuses, garbage on stdout, hangs, floods, scripts that
//! never read stdin. Each fails open (reported as HookFailed naming the script and the event,
//! the call goes on) or, configured fail-closed, fails the run; none hangs or leaves a process.

use crate::common::*;
use agentry::RunOptions;
use agentry::prelude::*;
use agentry_external::{CommandHook, EventName};
use std::time::{Duration, Instant};

fn ls_then_done() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.")
}

/// Runs `ls` under one PreToolUse command; returns what ran and the HookFailed reports.
async fn pre_tool_use(p: &Project, command: &str) -> (Vec<String>, Vec<String>) {
    let (model, log, failed) = (ls_then_done(), new_log(), new_log());
    let out = Runtime::new()
        .with(p.hooks(one("PreToolUse", "Bash", command)))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    (entries(&log), entries(&failed))
}

#[tokio::test]
async fn non_blocking_statuses_let_the_call_run_and_are_reported() {
    let p = Project::new();
    p.script(
        "strict.sh",
        "#!/bin/sh\nset -e\necho \"checking\" >&2\ntest -n \"$NOT_SET_ANYWHERE\"\necho never\n",
    );
    for (command, says) in [
        (
            "echo 'first line' >&2; echo second >&2; exit 1",
            "exited with status 1 (a non-blocking error): first line",
        ),
        (".claude/hooks/strict.sh", "exited with status 1"),
        (".claude/hooks/missing.sh", "exited with status 127"),
        ("exit 3", "exited with status 3"),
    ] {
        let (ran, failed) = pre_tool_use(&p, command).await;
        assert_eq!(ran, ["bash:ls"], "{command}: the call goes on");
        assert_eq!(failed.len(), 1, "{command}: {failed:?}");
        assert!(failed[0].contains(says), "{command}: {failed:?}");
        assert!(
            failed[0].contains(command) && failed[0].contains("PreToolUse"),
            "{failed:?}"
        );
    }
}

#[tokio::test]
async fn a_failing_command_is_a_hook_failed_event_on_the_runs_stream_and_in_its_history() {
    use futures::StreamExt;
    let p = Project::new();
    for (command, says) in [
        ("echo 'no such table' >&2; exit 1", "exited with status 1"),
        (".claude/hooks/missing.sh", "exited with status 127"),
        ("echo '{\"oops'", "JSON"),
    ] {
        let (model, log) = (ls_then_done(), new_log());
        let store = MemoryStore::new();
        let runtime =
            Runtime::new()
                .store(store.clone())
                .with(p.hooks(one("PreToolUse", "Bash", command)));
        let mut run = runtime.run(&agent(&model, &log), "go").start();
        let mut failed = Vec::new();
        while let Some(ev) = run.events().next().await {
            if let RunEvent::HookFailed {
                hook, event, error, ..
            } = ev
            {
                failed.push((hook, event, error));
            }
        }
        let out = run.result().await.unwrap();
        assert_eq!(out.text, "Done.", "{command}: the run goes on");
        assert_eq!(entries(&log), ["bash:ls"], "{command}: the call ran");
        assert_eq!(failed.len(), 1, "{command}: {failed:?}");
        let (hook, event, error) = &failed[0];
        // The command, and the settings file that declared it.
        assert!(
            hook.starts_with(command) && hook.ends_with("settings.json)"),
            "{hook}"
        );
        assert_eq!(*event, agentry::hooks::EventKind::BeforeTool);
        assert!(
            error.contains(says) && error.contains("PreToolUse") && error.contains(command),
            "{command}: {error}"
        );
        let recorded = agentry::RunStore::events(&store, &out.run_id)
            .await
            .unwrap();
        assert!(
            recorded.iter().any(|e| e.event.kind == "hook_failed"
                && e.event.data["error"].as_str() == Some(error.as_str())),
            "{command}: the history records it"
        );
    }
}

#[tokio::test]
async fn a_script_that_is_not_executable_exits_126_and_does_not_block() {
    let p = Project::new();
    let path = p.script("noexec.sh", "#!/bin/sh\nexit 2\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ran, failed) = pre_tool_use(&p, ".claude/hooks/noexec.sh").await;
    assert_eq!(ran, ["bash:ls"]);
    assert!(failed[0].contains("status 126"), "{failed:?}");
}

#[tokio::test]
async fn stdout_that_is_not_the_protocol_is_never_guessed_at() {
    let p = Project::new();
    for garbage in [
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "deny"'"#,
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "deny"}}'"#,
        r#"echo '{"decision": "maybe"}'"#,
    ] {
        let (ran, failed) = pre_tool_use(&p, garbage).await;
        assert_eq!(ran, ["bash:ls"], "{garbage}: no decision is guessed");
        assert_eq!(failed.len(), 1, "{garbage}: {failed:?}");
    }
    // Plain text is not an error: it is ignored on PreToolUse.
    let (ran, failed) = pre_tool_use(&p, "echo 'all good, carry on'").await;
    assert_eq!(ran, ["bash:ls"]);
    assert!(failed.is_empty(), "{failed:?}");
}

#[tokio::test]
async fn fail_closed_fails_the_run_naming_the_script_and_the_event() {
    let p = Project::new();
    let (model, log) = (ls_then_done(), new_log());
    let err = Runtime::new()
        .with(
            p.hooks(one("PreToolUse", "Bash", "echo '{broken'"))
                .fail_closed(),
        )
        .run(&agent(&model, &log), "go")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("echo '{broken'") && text.contains("PreToolUse"),
        "{text}"
    );
    assert!(entries(&log).is_empty(), "the tool did not run");
}

#[tokio::test]
async fn multi_line_json_unknown_keys_and_stdin_never_read() {
    let p = Project::new();
    // Never reads stdin (the payload is large), prints pretty JSON with keys it made up.
    let script = p.script(
        "pretty.sh",
        "#!/bin/sh\ncat <<'EOF'\n{\n  \"suppressOutput\": true,\n  \"my_key\": [1, 2],\n  \"hookSpecificOutput\": {\n    \"hookEventName\": \"PreToolUse\",\n    \"permissionDecision\": \"deny\",\n    \"permissionDecisionReason\": \"pretty no\"\n  }\n}\nEOF\n",
    );
    let big = "x".repeat(2 << 20);
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": big}))
        .text("ok");
    let (log, failed) = (new_log(), new_log());
    Runtime::new()
        // Past the default input limit: the payload must outgrow the pipe's buffer.
        .max_tool_input_bytes(4 << 20)
        .with(p.hooks(one("PreToolUse", "Bash", &script.display().to_string())))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert!(entries(&log).is_empty());
    assert_eq!(result_sent(&model, 1).content, "pretty no");
    assert!(entries(&failed).is_empty(), "{:?}", entries(&failed));
}

#[tokio::test]
async fn json_on_stderr_with_exit_2_is_the_block_message_as_it_is() {
    let p = Project::new();
    let (model, log) = (ls_then_done(), new_log());
    Runtime::new()
        .with(p.hooks(one(
            "PreToolUse",
            "",
            r#"echo '{"error": "nope"}' >&2; exit 2"#,
        )))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(result_sent(&model, 1).content, r#"{"error": "nope"}"#);
}

#[tokio::test]
async fn megabytes_on_stderr_neither_hang_nor_flood() {
    let p = Project::new();
    let flood = "head -c 5000000 /dev/zero | tr '\\0' 'e' >&2; echo done >&2; exit 2";
    let (model, log) = (ls_then_done(), new_log());
    Runtime::new()
        .with(p.hooks(one("PreToolUse", "", flood)))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    let content = result_sent(&model, 1).content.text().into_owned();
    assert!(entries(&log).is_empty(), "exit 2 still blocks");
    assert!(
        content.len() < 100_000,
        "stderr is capped: {} bytes",
        content.len()
    );
    assert!(
        content.ends_with("[stderr truncated]"),
        "{}",
        &content[content.len() - 40..]
    );
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive; a process that is gone has no status file.
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_hang_is_killed_at_its_timeout_with_its_whole_process_group() {
    let p = Project::new();
    p.script(
        "hang.sh",
        "#!/bin/sh\nsleep 300 &\necho $! > \"$CLAUDE_PROJECT_DIR/child.pid\"\necho $$ > \"$CLAUDE_PROJECT_DIR/script.pid\"\nsleep 300\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": ".claude/hooks/hang.sh", "timeout": 1}
    ]}]}});
    let (model, log, failed) = (ls_then_done(), new_log(), new_log());
    let started = Instant::now();
    Runtime::new()
        .with(p.hooks(settings))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        entries(&log),
        ["bash:ls"],
        "a hook that times out decides nothing"
    );
    let failed = entries(&failed);
    assert!(failed[0].contains("timed out after 1s"), "{failed:?}");
    for file in ["child.pid", "script.pid"] {
        let pid: i32 = p.read(file).trim().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(pid), "{file} ({pid}) was killed and reaped");
    }
}

#[tokio::test]
async fn a_cancelled_run_kills_the_running_command() {
    let p = Project::new();
    p.script(
        "slow.sh",
        "#!/bin/sh\necho $$ > \"$CLAUDE_PROJECT_DIR/slow.pid\"\nsleep 300\n",
    );
    let (model, log) = (ls_then_done(), new_log());
    let runtime = Runtime::new().with(p.hooks(one("PreToolUse", "", ".claude/hooks/slow.sh")));
    let agent = agent(&model, &log);
    let run = runtime.run(&agent, "go").start();
    let pid_file = p.path("slow.pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: i32 = p.read("slow.pid").trim().parse().unwrap();
    run.cancel();
    let out = run.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !alive(pid),
        "the command was killed when the run was cancelled"
    );
}

#[tokio::test]
async fn exec_form_substitutes_the_project_dir_and_runs_without_a_shell() {
    let p = Project::new();
    p.script(
        "args.sh",
        "#!/bin/sh\nprintf '%s|' \"$@\" > \"$CLAUDE_PROJECT_DIR/args.txt\"\n",
    );
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{
        "type": "command",
        "command": "${CLAUDE_PROJECT_DIR}/.claude/hooks/args.sh",
        "args": ["${CLAUDE_PROJECT_DIR}", "$HOME", "a b"]
    }]}]}});
    let (model, log) = (ls_then_done(), new_log());
    Runtime::new()
        .with(p.hooks(settings))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    let root = std::path::absolute(p.root()).unwrap();
    assert_eq!(p.read("args.txt"), format!("{}|$HOME|a b|", root.display()));
}

#[tokio::test]
async fn shell_form_is_posix_sh() {
    let p = Project::new();
    // `[[` is bash-only: under /bin/sh (dash) it is not found, so this does not block, as in
    // Claude Code.
    let (ran, failed) = pre_tool_use(&p, "[[ 1 == 1 ]] && exit 2; exit 0").await;
    assert_eq!(ran, ["bash:ls"]);
    assert!(failed.is_empty(), "{failed:?}");
}

#[tokio::test]
async fn a_command_hook_built_in_rust_registers_like_any_hook() {
    let p = Project::new();
    let (model, log) = (ls_then_done(), new_log());
    let agent = agent(&model, &log);
    let options = RunOptions::new().with(
        CommandHook::new(EventName::PreToolUse, "echo 'not in this run' >&2; exit 2")
            .matcher("Bash")
            .project_dir(p.root())
            .timeout(Duration::from_secs(5)),
    );
    Runtime::new()
        .run(&agent, "go")
        .with(options)
        .start()
        .result()
        .await
        .unwrap();
    assert!(entries(&log).is_empty());
    assert_eq!(result_sent(&model, 1).content, "not in this run");
}
