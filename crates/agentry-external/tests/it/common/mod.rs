//! A project directory with hook scripts and a `.claude/settings.json`, and an agent whose
//! tools scripts know (`bash` as Bash, `write_file` as Write).
#![allow(dead_code)]

use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{ToolFailure, ToolResult};
use agentry_external::CommandHooks;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A temporary project root.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        Project {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes an executable script under `.claude/hooks/` and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(&format!(".claude/hooks/{name}"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Writes `.claude/settings.json` and loads it as command hooks whose state (transcripts)
    /// stays inside the project.
    pub fn hooks(&self, settings: Value) -> CommandHooks {
        let path = self.path(".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();
        CommandHooks::load(&path)
            .expect("the settings load")
            .state_dir(self.path("state"))
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    pub fn json(&self, rel: &str) -> Value {
        let text = self.read(rel);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not JSON ({e}): {text}"))
    }
}

/// `{"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}`
pub fn one(event: &str, matcher: &str, command: &str) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}})
}

#[derive(Deserialize, JsonSchema)]
pub struct Cmd {
    pub cmd: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct WriteFile {
    pub path: String,
    pub content: String,
}

pub type Log = Arc<Mutex<Vec<String>>>;

pub fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// An agent with a `bash` tool (logs `bash:<cmd>`) and a `write_file` tool (logs
/// `write:<path>`).
pub fn agent(model: &ScriptedModel, log: &Log) -> Agent {
    let (l1, l2) = (log.clone(), log.clone());
    Agent::builder("coder")
        .model(model.clone())
        .tool(tool(
            "bash",
            "Run a command",
            move |a: Cmd, _ctx: ToolCtx| {
                let log = l1.clone();
                async move {
                    log.lock().unwrap().push(format!("bash:{}", a.cmd));
                    Ok::<_, ToolFailure>(format!("ran {}", a.cmd))
                }
            },
        ))
        .tool(tool(
            "write_file",
            "Write a file",
            move |a: WriteFile, _ctx: ToolCtx| {
                let log = l2.clone();
                async move {
                    log.lock().unwrap().push(format!("write:{}", a.path));
                    Ok::<_, ToolFailure>(format!("wrote {} bytes", a.content.len()))
                }
            },
        ))
        .build()
        .unwrap()
}

/// A hook that records every HookFailed as `hook | error`.
pub fn failures(log: &Log) -> impl IntoHook + use<> {
    let log = log.clone();
    on_sync::hook_failed(move |ev, _ctx| {
        log.lock()
            .unwrap()
            .push(format!("{} | {}", ev.hook(), ev.error()));
        Ok(())
    })
}

/// The content of the tool result the model got in its request `n` (0-based).
pub fn result_sent(model: &ScriptedModel, n: usize) -> ToolResult {
    model.requests()[n]
        .messages
        .iter()
        .rev()
        .find_map(|m| m.tool_result().cloned())
        .expect("the request carries a tool result")
}
