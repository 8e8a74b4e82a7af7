//! The fuzz targets: each module's `run` takes any bytes.

pub mod agentry_toml;
pub mod anthropic_stream;
pub mod claude_settings;
pub mod hook_reply;
pub mod local_chat_template;
pub mod local_tool_calls;
pub mod mcp_config;
pub mod mcp_tool_result;
pub mod openai_chat_stream;
pub mod openai_responses_stream;
pub mod run_snapshot;
pub mod server_requests;
pub mod stored_events;
pub mod tool_arguments;
pub mod webhook_reply;

/// A target: its name (the name of its module, of its cargo-fuzz target and of its corpus
/// directories) and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const ALL: &[Target] = &[
    ("agentry_toml", agentry_toml::run),
    ("anthropic_stream", anthropic_stream::run),
    ("claude_settings", claude_settings::run),
    ("hook_reply", hook_reply::run),
    ("local_chat_template", local_chat_template::run),
    ("local_tool_calls", local_tool_calls::run),
    ("mcp_config", mcp_config::run),
    ("mcp_tool_result", mcp_tool_result::run),
    ("openai_chat_stream", openai_chat_stream::run),
    ("openai_responses_stream", openai_responses_stream::run),
    ("run_snapshot", run_snapshot::run),
    ("server_requests", server_requests::run),
    ("stored_events", stored_events::run),
    ("tool_arguments", tool_arguments::run),
    ("webhook_reply", webhook_reply::run),
];
