//! `agentry.toml`: the agents, hooks, tools, MCP servers and store a project declares.
//!
//! Every table rejects keys it does not know, so a typo is an error with its line and column
//! rather than a setting silently left out. [`schema`] is the file's JSON Schema, which
//! editors (Taplo, Even Better TOML) use to complete and check it.

mod defaults;
mod duration;
mod layers;
mod load;
mod types;

pub use defaults::{DEFAULT_AGENT, default_assistant};
pub use duration::HumanDuration;
pub use layers::{Override, agentry_home, allow_always, local_config_path, sources};
pub use load::{ConfigError, FILE_NAME, LoadedConfig};
pub use types::*;

/// The JSON Schema of `agentry.toml`.
pub fn schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    serde_json::to_value(generator.into_root_schema_for::<Config>())
        .expect("a schema serializes to JSON")
}
