//! Secrets stay home: a run of a hosted model (a real aimock server that demands the key) whose
//! prompt, tool result and answer carry secrets of a `[hooks.redaction]` pattern, with command
//! hooks on every tool and stop event, OTLP telemetry and debug logs on; then every artefact the
//! run left (what the command printed, its logs, the store's files, what each hook script read
//! on stdin, the transcript, the exported spans) is searched for the provider's key and the
//! secrets. And a refused key is not repeated in the error that says so.

use crate::common::{Project, aimock_with_env};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The provider key the server demands (no known key shape: only its value can be looked for).
const KEY: &str = "agentry-test-key-7c1e9a5d3b";
/// A wrong key, refused by the server.
const WRONG_KEY: &str = "agentry-wrong-key-41f0c2d8e6";
/// Secrets of the redaction pattern: in the prompt, and in the file the tool reads.
const PROMPT_SECRET: &str = "ACCT-12345678";
const FILE_SECRET: &str = "ACCT-87654321";

const HOOK: &str =
    r#"{ type = "command", command = "cat >> hook-stdin.log; echo >> hook-stdin.log" }"#;

fn config(otlp: Option<u16>, see_secrets: bool) -> String {
    let mut config = format!(
        r#"
[agents.keeper]
model = "openai:gpt-test"
tools = ["Read"]

[hooks]
see_secrets = {see_secrets}

[hooks.redaction]
patterns = ["ACCT-[0-9]{{8}}"]

[[hooks.events.UserPromptSubmit]]
hooks = [{HOOK}]
[[hooks.events.PreToolUse]]
hooks = [{HOOK}]
[[hooks.events.PostToolUse]]
hooks = [{HOOK}]
[[hooks.events.Stop]]
hooks = [{HOOK}]
"#
    );
    if let Some(port) = otlp {
        config.push_str(&format!(
            "\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\n"
        ));
    }
    config
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Where in `artefacts` (name, bytes) `secret` occurs.
fn holders<'a>(artefacts: &'a [(String, Vec<u8>)], secret: &str) -> Vec<&'a str> {
    artefacts
        .iter()
        .filter(|(_, bytes)| bytes.windows(secret.len()).any(|w| w == secret.as_bytes()))
        .map(|(name, _)| name.as_str())
        .collect()
}

#[test]
fn keys_and_redacted_secrets_reach_no_artefact_of_a_run() {
    let Some(server) = aimock_with_env("secrets.json", &[("AIMOCK_API_KEYS", KEY)]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let receiver = crate::telemetry::receiver(dir.path());
    let p = Project::new(&config(receiver.as_ref().map(|r| r.port), false), json!([]));
    std::fs::write(
        p.file("notes.txt"),
        format!("The other account is {FILE_SECRET}.\n"),
    )
    .unwrap();
    let prompt = format!("Read notes.txt about account {PROMPT_SECRET}");
    let mut artefacts: Vec<(String, Vec<u8>)> = Vec::new();
    for json in [false, true] {
        let mut cmd = p.agentry();
        cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
            .env("OPENAI_API_KEY", KEY)
            .env("RUST_LOG", "debug");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.args(["run", &prompt]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        // The run did what the secrets were in: the tool read the file, the model answered.
        assert!(stdout.contains("as the other account"), "{stdout}");
        if json {
            // What the stored run shows, its events included.
            let run = crate::common::run_id(&crate::common::ndjson(&out.stdout));
            for args in [
                &["show", run.as_str(), "--events"][..],
                &["--json", "show", run.as_str(), "--events"],
            ] {
                let shown = p
                    .agentry()
                    .env("OPENAI_API_KEY", KEY)
                    .args(args)
                    .output()
                    .unwrap();
                assert_eq!(
                    shown.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&shown.stderr)
                );
                artefacts.push((format!("agentry {}", args.join(" ")), shown.stdout));
            }
        }
        artefacts.push((format!("stdout (json: {json})"), out.stdout));
        artefacts.push((format!("stderr (json: {json})"), out.stderr));
    }
    // The hooks ran, and read what they were given.
    let hook_log = std::fs::read_to_string(p.file("hook-stdin.log")).unwrap();
    for event in ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"] {
        assert!(hook_log.contains(event), "{event} not heard: {hook_log}");
    }
    for file in files(p.path()) {
        let name = file.strip_prefix(p.path()).unwrap().display().to_string();
        if name == "notes.txt" {
            continue;
        }
        artefacts.push((name, std::fs::read(&file).unwrap()));
    }
    if let Some(r) = &receiver {
        let spans = crate::telemetry::spans(r, 10);
        assert!(!spans.is_empty(), "no span was exported");
        artefacts.push(("OTLP spans".into(), std::fs::read(&r.spans).unwrap()));
    }
    let names: Vec<&str> = artefacts.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.contains("runs.db")),
        "the store is among the artefacts: {names:?}"
    );
    assert_eq!(holders(&artefacts, KEY), Vec::<&str>::new(), "the API key");
    // The run itself works with the real values: its history in the store holds them. Nothing
    // that reports the run does, nor what the hook scripts read.
    let reporting: Vec<(String, Vec<u8>)> = artefacts
        .iter()
        .filter(|(name, _)| !name.contains("runs.db"))
        .cloned()
        .collect();
    assert!(
        reporting.iter().any(|(name, _)| name == "hook-stdin.log"),
        "what the hooks read is searched"
    );
    assert_eq!(
        holders(&reporting, PROMPT_SECRET),
        Vec::<&str>::new(),
        "the prompt's secret"
    );
    assert_eq!(
        holders(&reporting, FILE_SECRET),
        Vec::<&str>::new(),
        "the tool result's secret"
    );

    // A refused key: the error says so, and does not repeat the key.
    let out = p
        .agentry()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", WRONG_KEY)
        .env("RUST_LOG", "debug")
        .args(["run", &prompt])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("401"), "says the key was refused: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for part in [WRONG_KEY, &WRONG_KEY[WRONG_KEY.len() - 8..]] {
        assert!(!stderr.contains(part), "{stderr}");
        assert!(!stdout.contains(part), "{stdout}");
    }
}

#[test]
fn hooks_configured_to_see_secrets_read_the_real_values() {
    let Some(server) = aimock_with_env("secrets.json", &[("AIMOCK_API_KEYS", KEY)]) else {
        return;
    };
    let p = Project::new(&config(None, true), json!([]));
    // The key is never in a payload: it is the provider's, not the run's.
    std::fs::write(
        p.file("notes.txt"),
        format!("The other account is {FILE_SECRET}.\n"),
    )
    .unwrap();
    let out = p
        .agentry()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", KEY)
        .args([
            "run",
            &format!("Read notes.txt about account {PROMPT_SECRET}"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hook_log = std::fs::read_to_string(p.file("hook-stdin.log")).unwrap();
    for event in ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"] {
        assert!(hook_log.contains(event), "{event} not heard: {hook_log}");
    }
    for secret in [PROMPT_SECRET, FILE_SECRET] {
        assert!(
            hook_log.contains(secret),
            "{secret} did not reach the hooks: {hook_log}"
        );
    }
    assert!(!hook_log.contains(KEY), "{hook_log}");
}
