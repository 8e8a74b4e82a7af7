//! Secrets in what hook scripts read: by default a script gets them masked by the run's
//! redactor, and an `updatedInput` keeps the real value of every field the script handed back
//! unchanged; with `see_secrets` it gets the run's real values.

use crate::common::*;
use agentry::builtins::Redactor;
use agentry::prelude::*;

const SECRET: &str = "ACCT-12345678";

/// A PreToolUse script on Write that saves its payload and moves the file elsewhere, handing
/// back the rest of the input as it got it.
const MOVE_TO_B: &str = r#"#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "payload.json"), "w") as f:
    json.dump(data, f)
updated = dict(data["tool_input"], file_path="b.txt")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "allow", "updatedInput": updated}}))
"#;

fn write_then_done(content: &str) -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("write_file", json!({"path": "a.txt", "content": content}))
        .text("Done.")
}

async fn run(see: bool) -> (Project, Log, ScriptedModel) {
    let p = Project::new();
    p.script("move_to_b.py", MOVE_TO_B);
    let mut hooks = p.hooks(one(
        "PreToolUse",
        "Write",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/move_to_b.py",
    ));
    if see {
        hooks = hooks.see_secrets();
    }
    let redactor = Redactor::without_defaults().pattern(r"ACCT-\d{8}").unwrap();
    let content = format!("the account is {SECRET}");
    let (model, log) = (write_then_done(&content), new_log());
    let out = Runtime::new()
        .redact(redactor)
        .with(hooks)
        .run(&agent(&model, &log), "save it")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    (p, log, model)
}

#[tokio::test]
async fn a_script_reads_secrets_masked_unless_its_hooks_see_secrets() {
    let content = format!("the account is {SECRET}");
    for see in [false, true] {
        let mask = !see;
        let (p, log, model) = run(see).await;
        let payload = p.json("payload.json");
        let seen = payload["tool_input"]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        if mask {
            assert!(!seen.contains(SECRET), "masked: {seen}");
            assert!(seen.starts_with("the account is "), "{seen}");
            assert!(
                !p.read("payload.json").contains(SECRET),
                "nowhere in the payload"
            );
        } else {
            assert_eq!(seen, content, "real values when configured to see them");
        }
        // Either way the tool wrote the real content where the script moved it.
        assert_eq!(entries(&log), ["write:b.txt"], "mask: {mask}");
        let result = result_sent(&model, 1);
        assert_eq!(
            result.content.text(),
            format!("wrote {} bytes", content.len()),
            "mask: {mask}: the tool got the real content back"
        );
    }
}
