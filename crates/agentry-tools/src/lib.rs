//! Built-in tools for agentry agents, with Claude Code's tool names and input fields, so that
//! Claude Code hook scripts (and any hook matching on `Bash`, `Write`, `file_path`, `command`,
//! ...) apply to them unchanged.
//!
//! | tool | input | approval by default |
//! |---|---|---|
//! | [`Bash`] | `command`, `timeout` (ms), `description` | yes |
//! | [`Read`] | `file_path`, `offset`, `limit` | no |
//! | [`Write`] | `file_path`, `content` | yes |
//! | [`Edit`] | `file_path`, `old_string`, `new_string`, `replace_all` | yes |
//! | [`Glob`] | `pattern`, `path` | no |
//! | [`Grep`] | `pattern`, `path`, `glob`, `type`, `output_mode`, `-i`, `-n`, `-A`, `-B`, `-C`, `head_limit`, `multiline` | no |
//! | [`WebFetch`] | `url`, `prompt` | no |
//!
//! Every file tool is confined to a [`Workspace`]: relative paths are relative to its root,
//! absolute paths must lead inside it, and `..` or symbolic links that lead out are refused. A
//! refusal, like any failure of a tool, reaches the model as a tool error, and the run goes on.
//! `Bash` runs in the workspace root, in a process group of its own that is killed when the
//! command ends, overruns its time or is cancelled.
//!
//! Claude Code gives hook scripts absolute `file_path`s; register [`AbsolutePaths`] so that
//! hooks see the absolute form whatever the model sent.
//!
//! Each tool is a type with a builder (`Bash::new(&ws).timeout(..)`); [`builtin`] builds one by
//! name from configuration options (see [`options_schema`] for what each accepts). Each
//! implements [`StructTool`](agentry_core::StructTool): its input type (e.g. [`ReadInput`]), its
//! name and its description make its spec, and its settings (the workspace, caps, whether calls
//! need approval) are fields. A tool of your own can be written the same way.
//!
//! ```
//! use agentry::prelude::*;
//! use agentry::Message;
//! use agentry_tools::{Read, Workspace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # std::fs::write(dir.path().join("notes.txt"), "first\nsecond\n")?;
//! let ws = Workspace::new(dir.path())?;
//! let model = ScriptedModel::new()
//!     .tool_call("Read", json!({"file_path": "notes.txt"}))
//!     .text("done");
//! let agent = Agent::builder("reader")
//!     .model(model.clone())
//!     .tool(Read::new(&ws))
//!     .build()?;
//! let out = Runtime::new().run(&agent, "Read my notes.").await?;
//! assert_eq!(out.output.as_deref(), Some("done"));
//!
//! // What the model was sent back: the file's lines, numbered.
//! let request = model.requests().pop().unwrap();
//! let result = request.messages.iter().find_map(Message::tool_result).unwrap();
//! assert_eq!(result.content, "     1\tfirst\n     2\tsecond\n");
//! # Ok(()) }
//! ```

#![warn(missing_docs, unreachable_pub)]

mod absolute_paths;
mod bash;
mod blocking;
mod config;
mod edit;
mod error;
mod files;
mod glob;
mod grep;
mod process;
mod read;
mod walk;
mod web_fetch;
mod workspace;
mod write;

pub use absolute_paths::AbsolutePaths;
pub use bash::{Bash, BashInput};
pub use config::{
    BashOptions, EditOptions, GlobOptions, GrepOptions, NAMES, ReadOptions, WebFetchOptions,
    WriteOptions, builtin, options_schema, read_only,
};
pub use edit::{Edit, EditInput};
pub use error::Error;
pub use glob::{Glob, GlobInput};
pub use grep::{Grep, GrepInput, OutputMode};
pub use read::{Read, ReadInput};
pub use web_fetch::{WebFetch, WebFetchInput};
pub use workspace::Workspace;
pub use write::{Write, WriteInput};
