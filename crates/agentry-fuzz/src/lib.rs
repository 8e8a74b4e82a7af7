//! # agentry-fuzz
//!
//! Fuzz targets for every parser of outside input in agentry, one module per target in
//! [`targets`]. Each target is a function `run(data: &[u8])` that feeds the bytes to a real
//! parser of the project through its public API (the same path the runtime takes) and asserts
//! what must hold whatever the input: no panic, no hang, no unbounded allocation, and where the
//! parser has a writer, that what it writes reads back the same.
//!
//! | target | parser |
//! |---|---|
//! | `openai_chat_stream` | an OpenAI Chat Completions turn (server-sent events, or an error body) |
//! | `openai_responses_stream` | an OpenAI Responses turn (server-sent events, or an error body) |
//! | `anthropic_stream` | an Anthropic Messages turn (server-sent events, or an error body) |
//! | `tool_arguments` | a model's tool-call arguments, checked against the tool's JSON Schema |
//! | `local_tool_calls` | the tool calls a local model writes as text |
//! | `local_chat_template` | a conversation rendered with a model's chat template |
//! | `run_snapshot` | a stored run: its snapshot record and its message log |
//! | `stored_events` | stored event rows |
//! | `hook_reply` | a command hook's exit code and stdout, per event |
//! | `webhook_reply` | a webhook's HTTP answer, per event |
//! | `claude_settings` | the `hooks` of a `.claude/settings.json` |
//! | `mcp_tool_result` | an MCP server's `tools/list` entry and `tools/call` result |
//! | `mcp_config` | a `.mcp.json` file |
//! | `agentry_toml` | an `agentry.toml`, on its own and layered with `-c` overrides |
//! | `server_requests` | the request bodies of `agentry serve`'s run API and doors |
//!
//! The cargo-fuzz project in `fuzz/` at the repository root runs each target under libFuzzer;
//! its corpora (`fuzz/corpus/<target>/`) and crash reproducers (`fuzz/regressions/<target>/`)
//! are replayed by this crate's `tests/replay.rs` on stable Rust, in seconds.
//!
//! ```
//! // Any bytes: a target returns normally, or panics on a bug.
//! agentry_fuzz::targets::claude_settings::run(br#"{"hooks": {"PreToolUse": []}}"#);
//! agentry_fuzz::targets::claude_settings::run(b"\xff not json");
//! assert!(agentry_fuzz::targets::ALL.iter().any(|(name, _)| *name == "claude_settings"));
//! ```
#![warn(missing_docs, unreachable_pub)]

mod hook_run;
mod model_turn;
mod support;
pub mod targets;
