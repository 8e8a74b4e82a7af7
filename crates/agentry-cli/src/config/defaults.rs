//! What a project that declares no agent gets.

use super::AgentConfig;

/// The name of the agent a project that declares none gets.
pub const DEFAULT_AGENT: &str = "assistant";

/// The agent of a project that declares none.
pub fn default_assistant() -> AgentConfig {
    AgentConfig {
        instructions: Some(DEFAULT_INSTRUCTIONS.to_owned()),
        ..AgentConfig::default()
    }
}

/// The instructions of the assistant a project without agents gets. They name no path, so
/// the same question gets the same first step wherever the project lies.
const DEFAULT_INSTRUCTIONS: &str = "You answer questions about the files in the current project. \
    To see files, call Glob (find files by pattern), Grep (search text) or Read (read a file). \
    When a tool result arrives, use it to answer the user's question right away, in one or two \
    sentences, without calling more tools unless the result was an error.";
