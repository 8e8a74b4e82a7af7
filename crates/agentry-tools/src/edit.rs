//! `Edit`: an exact string replaced in a file.

use crate::blocking::blocking;
use crate::{Error, Workspace, files};
use agentry_core::{StructTool, ToolCtx, ToolFailure};
use schemars::JsonSchema;
use serde::Deserialize;

/// The input of [`Edit`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct EditInput {
    /// The file to change: a path relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The exact text to replace, whitespace included. It must occur exactly once unless
    /// `replace_all` is set.
    pub old_string: String,
    /// The text to put in its place (different from `old_string`).
    pub new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Replaces an exact string in a file, as Claude Code's `Edit` does: it fails, changing
/// nothing, when `old_string` is missing, occurs more than once (unless `replace_all`), or
/// equals `new_string`. Needs approval by default.
#[derive(Clone, Debug)]
pub struct Edit {
    ws: Workspace,
    approval: bool,
}

impl Edit {
    /// `Edit` confined to `workspace`; each call needs approval.
    pub fn new(workspace: &Workspace) -> Self {
        Edit {
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

impl StructTool for Edit {
    type Input = EditInput;
    type Output = String;
    const NAME: &'static str = "Edit";
    const DESCRIPTION: &'static str = "Replaces exact text in an existing file of the workspace. \
        `old_string` must match the file exactly (whitespace and indentation included) and occur \
        once; include more surrounding lines to make it unique, or set `replace_all` to replace \
        every occurrence. Read the file first to copy the text exactly.";

    async fn run(&self, input: EditInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let ws = self.ws.clone();
        blocking(move |_| edit(&ws, &input)).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// Applies one edit.
fn edit(ws: &Workspace, input: &EditInput) -> Result<String, Error> {
    if input.old_string.is_empty() {
        return Err(Error::Input(
            "`old_string` is empty; give the exact text to replace (to create a file, use Write)"
                .into(),
        ));
    }
    if input.old_string == input.new_string {
        return Err(Error::Input(
            "`old_string` and `new_string` are the same, so nothing would change; give the new text in `new_string`".into(),
        ));
    }
    let (text, path) = files::read_text(ws, &input.file_path)?;
    let shown = ws.show(&path);
    let found = text.matches(input.old_string.as_str()).count();
    if found == 0 {
        return Err(Error::Input(format!(
            "`old_string` was not found in `{shown}`; Read the file and copy the text exactly, whitespace and indentation included"
        )));
    }
    if found > 1 && !input.replace_all {
        return Err(Error::Input(format!(
            "`old_string` occurs {found} times in `{shown}`; include more surrounding lines so that it occurs once, or set `replace_all` to replace all {found}"
        )));
    }
    let changed = if input.replace_all {
        text.replace(input.old_string.as_str(), &input.new_string)
    } else {
        text.replacen(input.old_string.as_str(), &input.new_string, 1)
    };
    files::write(ws, &input.file_path, changed.as_bytes())?;
    let times = if found == 1 {
        "1 occurrence".to_string()
    } else {
        format!("{found} occurrences")
    };
    Ok(format!("Edited `{shown}`: replaced {times}"))
}
