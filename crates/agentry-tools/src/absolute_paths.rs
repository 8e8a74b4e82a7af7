//! A hook that makes the file tools' paths absolute before any other hook sees them.

use crate::Workspace;
use agentry_core::hooks::{
    BeforeTool, Events, Hook, HookCtx, HookExt, HookRegistration, HookResult, IntoHook,
};
use serde_json::Value;

/// Rewrites the path a model gave a built-in file tool (`file_path` of `Read`, `Write` and
/// `Edit`; `path` of `Glob` and `Grep`) to the absolute path it resolves to in the workspace,
/// before other BeforeTool hooks run.
///
/// Claude Code hands hook scripts absolute `file_path`s, and scripts match on them (a
/// `*/src/*` rule, a protected-file list); a model of an agentry run may well send a path
/// relative to the workspace root. Registered on a runtime or an agent, this hook makes every
/// later hook, and the tool, see the absolute form. A path that the workspace refuses is left
/// as it was: the tool refuses it with its own error.
///
/// It runs at priority [`AbsolutePaths::PRIORITY`], above guards (200), so that they see the
/// absolute path too.
///
/// ```
/// use agentry::prelude::*;
/// use agentry_tools::{AbsolutePaths, Workspace};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let ws = Workspace::new(dir.path())?;
/// let runtime = Runtime::new().with(AbsolutePaths::new(&ws));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AbsolutePaths {
    ws: Workspace,
}

impl AbsolutePaths {
    /// The priority it runs at: before guards and policies, so they see absolute paths.
    pub const PRIORITY: i32 = 1000;

    /// The hook for `workspace`'s file tools.
    pub fn new(workspace: &Workspace) -> Self {
        AbsolutePaths {
            ws: workspace.clone(),
        }
    }
}

impl IntoHook for AbsolutePaths {
    fn into_hook(self) -> HookRegistration {
        Rewrite(self)
            .named("absolute_paths")
            .priority(Self::PRIORITY)
    }
}

/// The hook itself.
struct Rewrite(AbsolutePaths);

impl Hook for Rewrite {
    fn wants(&self) -> Events {
        Events::BEFORE_TOOL
    }

    async fn before_tool(&self, mut ev: BeforeTool, _ctx: &HookCtx) -> HookResult<BeforeTool> {
        let field = match ev.name() {
            "Read" | "Write" | "Edit" => "file_path",
            "Glob" | "Grep" => "path",
            _ => return Ok(ev),
        };
        if let Some(Value::String(path)) = ev.input.get(field)
            && !path.starts_with('/')
            && let Ok(absolute) = self.0.ws.resolve(path)
        {
            ev.input[field] = Value::String(absolute.display().to_string());
        }
        Ok(ev)
    }
}
