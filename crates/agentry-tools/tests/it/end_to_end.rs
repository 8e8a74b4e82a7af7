//! The tools in a real run: a scripted model calls Bash, Write and Read through the runtime; a
//! BeforeTool hook sees Claude Code's tool name and fields; Write pauses the run for approval
//! and runs once approved; AbsolutePaths gives hooks absolute `file_path`s; a refused path
//! reaches the model as an error and the run goes on.

use agentry::Decision;
use agentry::prelude::*;
use agentry::{Message, ModelRequest, ScriptedTurn, ToolResult, hooks::BeforeTool};
use agentry_tools::{AbsolutePaths, Bash, Read, Workspace, Write};
use std::sync::{Arc, Mutex};

/// The tool results the model has been sent so far.
fn results(req: &ModelRequest) -> Vec<&ToolResult> {
    req.messages
        .iter()
        .filter_map(Message::tool_result)
        .collect()
}

/// Bash, then Write (approval), then Read of what was written, then a Read outside the
/// workspace, then a final answer quoting the results.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|_, req| {
        match results(req).len() {
        0 => ScriptedTurn::new().with_tool_call_id(
            "c1",
            "Bash",
            json!({"command": "echo hi > greeting.txt && cat greeting.txt", "description": "Greet"}),
        ),
        1 => ScriptedTurn::new().with_tool_call_id(
            "c2",
            "Write",
            json!({"file_path": "notes/todo.md", "content": "- ship it\n"}),
        ),
        2 => ScriptedTurn::new().with_tool_call_id(
            "c3",
            "Read",
            json!({"file_path": "notes/todo.md"}),
        ),
        3 => ScriptedTurn::new().with_tool_call_id(
            "c4",
            "Read",
            json!({"file_path": "../../etc/passwd"}),
        ),
        _ => {
            let r = results(req);
            let text: Vec<String> = r
                .iter()
                .map(|r| format!("{}:{}:{}", r.call_id, r.is_error, r.content))
                .collect();
            ScriptedTurn::text(text.join("|"))
        }
    }
    })
}

#[tokio::test]
async fn a_scripted_run_uses_bash_write_and_read_with_hooks_and_approval() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let agent = Agent::builder("coder")
        .model(model())
        .tool(Bash::new(&ws).approval(false))
        .tool(Write::new(&ws))
        .tool(Read::new(&ws))
        .build()
        .unwrap();
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let seen2 = seen.clone();
    let runtime = Runtime::new()
        .store(MemoryStore::new())
        .with(AbsolutePaths::new(&ws))
        .with(on::before_tool(move |ev: BeforeTool, _ctx| {
            seen2
                .lock()
                .unwrap()
                .push((ev.name().to_string(), ev.input.clone()));
            async move { Ok(ev) }
        }));

    let out = runtime.run(&agent, "Set up the notes.").await.unwrap();
    // Bash ran without approval; Write waits for it.
    assert!(dir.path().join("greeting.txt").exists());
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("expected a pause, got {:?}", out.stop)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool, "Write");
    // The hook made the path absolute, as Claude Code gives it to scripts.
    let absolute = ws.root().join("notes/todo.md").display().to_string();
    assert_eq!(pending[0].input["file_path"], absolute.as_str());
    assert!(!dir.path().join("notes/todo.md").exists());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].0, "Bash");
        assert_eq!(
            seen[0].1["command"],
            "echo hi > greeting.txt && cat greeting.txt"
        );
        assert_eq!(seen[1].0, "Write");
        assert_eq!(seen[1].1["file_path"], absolute.as_str());
    }

    let done = runtime
        .decide(&agent, &out.run_id, [Decision::approve("c2")])
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/todo.md")).unwrap(),
        "- ship it\n"
    );
    let answer = done.output.unwrap();
    let parts: Vec<&str> = answer.split('|').collect();
    assert_eq!(parts[0], "c1:false:hi\n");
    assert!(parts[1].starts_with("c2:false:Created `"), "{answer}");
    assert_eq!(parts[2], "c3:false:     1\t- ship it\n");
    assert!(
        parts[3].starts_with("c4:true:refused `../../etc/passwd`"),
        "{answer}"
    );
    assert!(
        parts[3].contains(&format!(
            "outside the workspace root `{}`",
            ws.root().display()
        )),
        "{answer}"
    );
    let names: Vec<String> = seen.lock().unwrap().iter().map(|s| s.0.clone()).collect();
    assert!(
        names.ends_with(&["Read".to_string(), "Read".to_string()]),
        "{names:?}"
    );
}
