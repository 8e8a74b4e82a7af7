//! Hooks registered on a running runtime: a settings file that changes on disk is reloaded
//! between runs (never mid-run), a file that no longer reads keeps the old hooks, and every
//! change is reported as HookRegistered / HookUnregistered.

use crate::common;

use crate::common::*;
use agentry::ToolFailure;
use agentry::hooks::RegistryEvent;
use agentry::prelude::*;
use agentry_external::CommandHooks;
use std::time::Duration;

fn deny(reason: &str) -> Value {
    one(
        "PreToolUse",
        "Bash",
        &format!("echo '{reason}' >&2; exit 2"),
    )
}

fn ls() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.")
}

/// Waits for the next registry change.
async fn next_change(
    events: &mut tokio::sync::broadcast::Receiver<RegistryEvent>,
) -> RegistryEvent {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("the watcher reloads within 10 s")
        .expect("the registry is alive")
}

#[tokio::test]
async fn a_settings_file_that_changes_is_reloaded_between_runs() {
    let p = Project::new();
    p.hooks(deny("first rule"));
    let runtime = Runtime::new();
    let mut changes = runtime.live_hooks().subscribe();
    let state = p.path("state");
    let watch = CommandHooks::watch(
        p.path(".claude/settings.json"),
        runtime.live_hooks(),
        Duration::from_millis(50),
        move |hooks| hooks.state_dir(state.clone()),
    )
    .unwrap();
    assert!(matches!(
        next_change(&mut changes).await,
        RegistryEvent::HookRegistered { .. }
    ));

    let (model, log) = (ls(), new_log());
    runtime.run(&agent(&model, &log), "go").await.unwrap();
    assert_eq!(result_sent(&model, 1).content, "first rule");

    // A new rule: the next run gets it, in place of the old one.
    std::thread::sleep(Duration::from_millis(20));
    p.hooks(deny("second rule, longer"));
    assert!(matches!(
        next_change(&mut changes).await,
        RegistryEvent::HookUnregistered { .. }
    ));
    assert!(matches!(
        next_change(&mut changes).await,
        RegistryEvent::HookRegistered { .. }
    ));
    let (model, log) = (ls(), new_log());
    runtime.run(&agent(&model, &log), "go").await.unwrap();
    assert_eq!(result_sent(&model, 1).content, "second rule, longer");
    assert_eq!(runtime.live_hooks().len(), 1);

    // A file that no longer reads leaves the hooks as they were.
    std::fs::write(
        p.path(".claude/settings.json"),
        "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Ba(\"",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (model, log) = (ls(), new_log());
    runtime.run(&agent(&model, &log), "go").await.unwrap();
    assert_eq!(result_sent(&model, 1).content, "second rule, longer");

    watch.stop();
    assert!(matches!(
        next_change(&mut changes).await,
        RegistryEvent::HookUnregistered { .. }
    ));
    let (model, log) = (ls(), new_log());
    runtime.run(&agent(&model, &log), "go").await.unwrap();
    assert_eq!(entries(&log), ["bash:ls"], "no hook after stop");
}

#[tokio::test]
async fn a_run_under_way_keeps_the_hooks_it_started_with() {
    let p = Project::new();
    let runtime = Runtime::new();
    let handle = runtime.register(p.hooks(deny("registered")));
    // The first call is blocked; before the second, the hook is unregistered — the run keeps it.
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .tool_call("bash", json!({"cmd": "pwd"}))
        .text("Done.");
    let log = new_log();
    let agent = Agent::builder("coder")
        .model(model.clone())
        .tool(tool("bash", "Run", {
            let log = log.clone();
            move |a: Cmd, _ctx: ToolCtx| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(a.cmd);
                    Ok::<_, ToolFailure>("ran")
                }
            }
        }))
        .with(agentry::hooks::on::after_tool({
            let handle = std::sync::Mutex::new(Some(handle));
            move |ev, _ctx| {
                if let Some(h) = handle.lock().unwrap().take() {
                    assert!(h.unregister());
                }
                async move { Ok(ev) }
            }
        }))
        .build()
        .unwrap();
    runtime.run(&agent, "go").await.unwrap();
    assert!(
        entries(&log).is_empty(),
        "both calls blocked: {:?}",
        entries(&log)
    );
    assert_eq!(runtime.live_hooks().len(), 0);
    let (model, log2) = (ls(), new_log());
    runtime
        .run(&common::agent(&model, &log2), "go")
        .await
        .unwrap();
    assert_eq!(entries(&log2), ["bash:ls"], "the next run has no hook");
}

#[tokio::test]
async fn a_first_load_that_fails_registers_nothing() {
    let p = Project::new();
    std::fs::create_dir_all(p.path(".claude")).unwrap();
    std::fs::write(
        p.path(".claude/settings.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Edit(", "hooks": []}]}}"#,
    )
    .unwrap();
    let runtime = Runtime::new();
    let err = CommandHooks::watch(
        p.path(".claude/settings.json"),
        runtime.live_hooks(),
        Duration::from_millis(50),
        |h| h,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("hooks.PreToolUse[0].matcher"),
        "{err}"
    );
    assert!(runtime.live_hooks().is_empty());
}
