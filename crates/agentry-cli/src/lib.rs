//! `agentry.toml`, the config file of the `agentry` command, as a library: its types, its
//! reading (with errors that point at the line and column), its layers (the user's config,
//! `.agentry/local.toml`, `-c` overrides) and its JSON Schema. The `agentry` binary of this
//! package reads its config through it; tools that check or generate config files can too.
//!
//! ```
//! use agentry_cli::config::{ConfigError, LoadedConfig};
//! use std::path::{Path, PathBuf};
//!
//! let text = "[agents.helper]\nmodel = \"openai:gpt-4.1-mini\"\ntools = [\"Read\"]\n";
//! let file = LoadedConfig::parse(text, Path::new("agentry.toml"), PathBuf::from(".")).unwrap();
//! assert_eq!(file.first_agent().as_deref(), Some("helper"));
//!
//! // A key no table knows is an error at its line and column.
//! let typo = "[agents.helper]\nmodle = \"openai:gpt-4.1-mini\"\n";
//! let Err(ConfigError::At(at)) = LoadedConfig::parse(typo, Path::new("agentry.toml"), ".".into())
//! else {
//!     panic!("a typo is refused");
//! };
//! assert_eq!((at.line, at.column), (2, 1));
//! ```
#![warn(missing_docs, unreachable_pub)]

pub mod config;
