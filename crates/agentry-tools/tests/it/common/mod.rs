//! Shared test support: a workspace in a fresh temporary directory, and calling a tool directly.
#![allow(dead_code)]

use agentry::RunContextSpec;
use agentry::Tool;
use agentry::prelude::*;
use agentry_tools::Workspace;

/// A temporary directory with a `root` directory inside (the workspace) and room beside it for
/// things outside the workspace.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub ws: Workspace,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        let ws = Workspace::new(dir.path().join("root")).unwrap();
        Sandbox { dir, ws }
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> std::path::PathBuf {
        self.ws.root().to_path_buf()
    }

    /// A directory beside the root, outside the workspace.
    pub fn outside(&self) -> std::path::PathBuf {
        std::fs::canonicalize(self.dir.path().join("outside")).unwrap()
    }

    /// Writes a file under the root.
    pub fn file(&self, rel: &str, content: &str) -> std::path::PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }
}

/// A context for calling a tool outside a run.
pub fn ctx(tool: &str) -> ToolCtx {
    ToolCtx::detached(
        RunContextSpec {
            step: 1,
            ..RunContextSpec::new("run-1", "a")
        },
        tool,
    )
}

/// Calls `tool` with `input`: its text, or its failure's message.
pub async fn call(tool: &dyn Tool, input: Value) -> Result<String, String> {
    let name = tool.spec().name.clone();
    tool.call(input, ctx(&name))
        .await
        .map(|o| o.content.text().into_owned())
        .map_err(|f| f.message().to_string())
}
