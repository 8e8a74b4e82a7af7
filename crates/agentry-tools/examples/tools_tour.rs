//! A tour of the built-in tools: an agent explores a small project in a temporary workspace.
//!
//! The model is a `ScriptedModel` that calls Glob, Grep, Read, Edit and Bash in turn, so the
//! run is the same every time; a real model calls the same tools with the same inputs. Every
//! call is printed by a BeforeTool hook, with Claude Code's tool name and input fields, the
//! way a Claude Code hook script would see them. Edit and Bash need approval by default: here
//! they are built with `approval(false)` (from configuration, `{"approval": false}`).
//!
//! Run it with `cargo run -p agentry-tools --example tools_tour`.

use agentry::hooks::{AfterTool, BeforeTool, ToolFailed};
use agentry::prelude::*;
use agentry_tools::{AbsolutePaths, Workspace, builtin};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("src"))?;
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    // TODO: greet\n    println!(\"hi\");\n}\n",
    )?;
    std::fs::write(dir.path().join(".gitignore"), "target/\n")?;
    std::fs::create_dir_all(dir.path().join("target"))?;
    std::fs::write(
        dir.path().join("target/skipped.rs"),
        "// TODO: never seen\n",
    )?;
    let ws = Workspace::new(dir.path())?;

    let model = ScriptedModel::new()
        .tool_call("Glob", json!({"pattern": "**/*.rs"}))
        .tool_call("Grep", json!({"pattern": "TODO", "output_mode": "content"}))
        .tool_call("Read", json!({"file_path": "src/main.rs"}))
        .tool_call(
            "Edit",
            json!({"file_path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
        )
        .tool_call(
            "Bash",
            json!({"command": "grep -n hello src/main.rs", "description": "Check the edit"}),
        )
        .tool_call("Read", json!({"file_path": "../outside.txt"}))
        .text("The greeting now says hello.");

    let mut agent = Agent::builder("explorer").model(model.clone());
    for name in ["Glob", "Grep", "Read", "Edit", "Bash"] {
        agent = agent.tool_arc(builtin(name, &json!({"approval": false}), &ws)?);
    }
    let agent = agent.build()?;

    let runtime = Runtime::new()
        .with(AbsolutePaths::new(&ws))
        .with(on::before_tool(|ev: BeforeTool, _ctx| async move {
            println!("> {} {}", ev.name(), ev.input);
            Ok(ev)
        }))
        .with(on::after_tool(|ev: AfterTool, _ctx| async move {
            let r = ev.result();
            let tag = if r.is_error { "error" } else { "ok" };
            println!("< {tag}\n{}\n", r.content.describe().trim_end());
            Ok(ev)
        }))
        // A failed call (here the path outside the workspace) goes to ToolFailed hooks; the
        // model gets the error as the result and the run goes on.
        .with(on::tool_failed(|ev: ToolFailed, _ctx| async move {
            println!("< error\n{}\n", ev.error());
            Ok(ev)
        }));
    let out = runtime.run(&agent, "Make the greeting friendlier.").await?;
    println!("answer: {}", out.output.unwrap_or_default());
    Ok(())
}
