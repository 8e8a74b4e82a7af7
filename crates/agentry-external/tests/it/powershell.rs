//! Shell-form commands that name PowerShell (`"shell": "powershell"`) run in it, as
//! `<pwsh> -NoProfile -NonInteractive -Command <command>`; a missing PowerShell is an error that
//! says so, naming the hook, and a `shell` that names no shell is refused when the settings are
//! read; persistent hook processes name their shell the same way. The PowerShell here is a stand-in script (this machine has none): it records how it
//! was called and denies the call as a PreToolUse hook does, with exit status 2.

use crate::common::*;
use agentry::prelude::*;
use agentry_external::{CommandHook, CommandHooks, CommandSpec, EventName, HookSettings};

fn settings(shell: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "Write-Error 'no'; exit 2", "shell": shell}
    ]}]}})
}

#[tokio::test]
async fn powershell_commands_run_in_powershell_and_a_missing_one_is_named() {
    let p = Project::new();
    let pwsh = p.script(
        "pwsh",
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$CLAUDE_PROJECT_DIR/pwsh-args.txt\"\necho 'denied in PowerShell' >&2\nexit 2\n",
    );
    // SAFETY: the only test of this binary, on a current-thread runtime: no other thread of
    // this process reads the environment meanwhile.
    unsafe { std::env::set_var("AGENTRY_POWERSHELL", &pwsh) };
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let (log, failed) = (new_log(), new_log());
    let out = Runtime::new()
        .with(p.hooks(settings("powershell")))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    assert!(entries(&log).is_empty(), "the hook denied the call");
    assert!(
        result_sent(&model, 1)
            .content
            .text()
            .contains("denied in PowerShell"),
        "{:?}",
        result_sent(&model, 1)
    );
    assert_eq!(
        p.read("pwsh-args.txt").lines().collect::<Vec<_>>(),
        [
            "-NoProfile",
            "-NonInteractive",
            "-Command",
            "Write-Error 'no'; exit 2"
        ]
    );
    assert!(failed.lock().unwrap().is_empty());

    // No PowerShell: the hook fails (open, by default) with an error that says what is missing.
    let missing = p.path("nowhere/pwsh");
    // SAFETY: as above.
    unsafe { std::env::set_var("AGENTRY_POWERSHELL", &missing) };
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let (log, failed) = (new_log(), new_log());
    Runtime::new()
        .with(CommandHook::with_spec(EventName::PreToolUse, {
            let mut spec = CommandSpec::shell("Get-Date");
            spec.shell = Some("powershell".into());
            spec
        }))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(
        entries(&log),
        ["bash:ls"],
        "a hook that cannot start fails open"
    );
    let failed = entries(&failed);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].contains("Get-Date")
            && failed[0].contains("PowerShell")
            && failed[0].contains(&missing.display().to_string()),
        "{failed:?}"
    );

    // A shell that is none of these is refused when read, naming where it is.
    let err = HookSettings::from_json(&settings("zsh").to_string()).unwrap_err();
    let err = err.to_string();
    assert!(
        err.contains("PreToolUse") && err.contains("shell") && err.contains("`zsh`"),
        "{err}"
    );
    let mut spec = CommandSpec::shell("echo");
    spec.shell = Some("fish".into());
    let err = CommandHook::with_spec(EventName::Stop, spec)
        .into_hooks()
        .map(|_: CommandHooks| ())
        .unwrap_err();
    assert!(err.to_string().contains("`fish`"), "{err}");

    // A persistent hook process names its shell the same way.
    let persistent = |shell: &str| {
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "persistent", "command": "Start-Hook", "shell": shell}
        ]}]}})
    };
    let err = HookSettings::from_json(&persistent("zsh").to_string()).unwrap_err();
    assert!(err.to_string().contains("`zsh`"), "{err}");
    // SAFETY: as above.
    unsafe { std::env::set_var("AGENTRY_POWERSHELL", &pwsh) };
    std::fs::remove_file(p.path("pwsh-args.txt")).unwrap();
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let (log, failed) = (new_log(), new_log());
    Runtime::new()
        .with(p.hooks(persistent("powershell")))
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(
        p.read("pwsh-args.txt").lines().collect::<Vec<_>>(),
        ["-NoProfile", "-NonInteractive", "-Command", "Start-Hook"]
    );
    // The stand-in exits without answering: the hook fails open, and says so.
    assert_eq!(entries(&log), ["bash:ls"]);
    assert_eq!(entries(&failed).len(), 1, "{:?}", entries(&failed));
}
