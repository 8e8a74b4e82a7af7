//! Hooks in any language for agentry: Claude Code–compatible command hooks and signed webhooks.
//!
//! A `hooks` block in Claude Code's settings format — a `.claude/settings.json` as it is, a
//! plugin's `hooks/hooks.json`, or built in Rust — becomes one agentry hook that runs the
//! scripts on the matching events, with the protocol Claude Code hook scripts already speak:
//! the event as JSON on stdin; exit code 0, 2 or other; a JSON decision (or plain text) on
//! stdout; stderr as the reason for a block. Existing scripts run unchanged.
//!
//! ```no_run
//! use agentry::prelude::*;
//! use agentry_external::CommandHooks;
//!
//! # async fn demo(agent: Agent) -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::new().with(CommandHooks::load(".claude/settings.json")?);
//! let out = runtime.run(&agent, "Tidy the logs").await?;
//! # Ok(()) }
//! ```
//!
//! Claude Code's events map onto agentry's lifecycle (see [`EventName`]): PreToolUse is
//! BeforeTool (deny blocks the call with the reason the model sees, ask pauses it for approval,
//! `updatedInput` rewrites its input), PostToolUse is AfterTool, PostToolUseFailure is
//! ToolFailed, UserPromptSubmit is a top-level RunStart, Stop and SubagentStop are Stop,
//! PreCompact is BeforeCompact, PermissionRequest and Notification are ApprovalRequested.
//!
//! # What a script can count on
//! - the working directory is the project root, exported as `CLAUDE_PROJECT_DIR` (with
//!   `CLAUDECODE=1`, `CLAUDE_CODE_SESSION_ID`, and `CLAUDE_ENV_FILE` for SessionStart);
//! - shell-form commands run with `/bin/sh -c`, exec form (`args`) without a shell;
//! - stdin is one compact line of JSON and a newline, closed after; a script need not read it;
//! - tools appear under Claude Code's names and field names ([`ToolNames`]), file paths absolute;
//! - `transcript_path` is a JSONL transcript in Claude Code's line format, complete before any
//!   hook of a later event runs (Stop hooks see the final answer in it);
//! - a command that overruns its timeout (600 s by default; 30 s for UserPromptSubmit) is killed
//!   with its whole process group, and takes no decision.
//!
//! # Webhooks
//! An `http` handler ([`WebhookSpec`], or [`Webhook`] from Rust) POSTs the same JSON to a URL,
//! as Claude Code's HTTP hooks do: a 2xx with a JSON object decides as a command's stdout would,
//! an empty 2xx is success, anything else is a non-blocking error (an HTTP status never blocks).
//! Deliveries are signed with the Standard Webhooks scheme; header values and the secret are
//! `${VAR}` templates resolved from the environment at each delivery, never stored or shown;
//! failed deliveries of events that decide nothing are retried with backoff; `failClosed` makes
//! a webhook's failure fail the run.
//!
//! # The crate's parts
//! - `hooks/`: [`CommandHooks`] and its options; the engine its parts share; the agentry hook it
//!   registers as, which hands each event to the Claude Code events it maps to, then to the
//!   handlers registered under the event's own name; what it stores with a run; settings files
//!   watched for changes ([`SettingsWatch`]).
//! - `claude/`: Claude Code's protocol: [`EventName`] and what each maps to, [`HookSettings`],
//!   [`ToolNames`], the JSONL transcript, [`Sessions`], the fields every payload carries, and
//!   one file per family of its events (tools, prompt, stop, sub-agents, compaction, approvals).
//! - `command/`: running handlers: [`CommandSpec`] and [`CommandHook`]; a command per event in
//!   its own process group (`process`) or a [`PersistentSpec`] process (`persistent/`); firing an
//!   event at the handlers that match (`fire`, `deliver`, `background`, `env`); reading an answer
//!   (`reply`, `accepts`) and merging the answers (`merged`).
//! - `webhook/`: [`WebhookSpec`] and [`Webhook`]; a delivery (`deliver`, with its headers and key
//!   resolved in `prepare`, over the shared `client`) and its signature (`signing`).
//! - shared: [`HandlerSpec`] (`handler`), [`Matcher`] (`matcher`), a handler's `if` rule
//!   (`condition`), [`SettingsError`] (`error`), and agentry's own events under their own names
//!   (`native/`: their fields are their JSON form, the events' `Serialize` in agentry-core; what
//!   an answer does to each is here).

#![warn(missing_docs, unreachable_pub)]

mod claude;
mod command;
mod condition;
mod config_file;
mod error;
mod handler;
mod hooks;
mod matcher;
mod media;
mod native;
mod webhook;

pub use claude::{
    EnabledPlugin, EventName, HookSettings, SAMPLE_FIELDS, Sessions, ToolAlias, ToolNames,
    agentry_home, claude_config_dir, enabled_plugins, installed_plugin,
};
pub use command::{CommandHook, CommandSpec, PersistentSpec, Shell};
pub use config_file::{
    DEFAULT_MAX_CONFIG_BYTES, MAX_CONFIG_BYTES_VAR, max_config_bytes, read_config_file,
};
pub use error::SettingsError;
pub use handler::HandlerSpec;
pub use hooks::{CommandHooks, SettingsWatch};
pub use matcher::Matcher;
pub use webhook::{MAX_RETRIES, Webhook, WebhookSpec};

// The book's chapters whose samples use this crate, compiled and run as doc tests by
// `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/external-hooks.md")]
mod book_external_hooks {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/persistent-hooks.md")]
mod book_persistent_hooks {}
#[cfg(doctest)]
#[doc = include_str!("../../../docs/src/webhooks.md")]
mod book_webhooks {}
