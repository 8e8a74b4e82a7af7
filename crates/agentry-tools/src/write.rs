//! `Write`: a file's whole content.

use crate::blocking::blocking;
use crate::{Workspace, files};
use agentry_core::{StructTool, ToolCtx, ToolFailure};
use schemars::JsonSchema;
use serde::Deserialize;

/// The input of [`Write`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The file to write: a path relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The file's whole new content.
    pub content: String,
}

/// Writes a whole file in the workspace, creating it and its parent directories as needed, as
/// Claude Code's `Write` does. Needs approval by default.
#[derive(Clone, Debug)]
pub struct Write {
    ws: Workspace,
    approval: bool,
}

impl Write {
    /// `Write` confined to `workspace`; each call needs approval.
    pub fn new(workspace: &Workspace) -> Self {
        Write {
            ws: workspace.clone(),
            approval: true,
        }
    }

    /// Whether each call waits for a person's approval (default: yes).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }
}

impl StructTool for Write {
    type Input = WriteInput;
    type Output = String;
    const NAME: &'static str = "Write";
    const DESCRIPTION: &'static str = "Writes a file in the workspace, replacing its content if it \
        exists and creating it (and its parent directories) if not. To change part of an existing \
        file, prefer Edit.";

    async fn run(&self, input: WriteInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let ws = self.ws.clone();
        let done = blocking(move |_| {
            let written = files::write(&ws, &input.file_path, input.content.as_bytes())?;
            Ok((written, input.content.len(), ws))
        })
        .await?;
        let (written, len, ws) = done;
        let verb = if written.created {
            "Created"
        } else {
            "Overwrote"
        };
        Ok(format!("{verb} `{}` ({len} bytes)", ws.show(&written.path)))
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}
