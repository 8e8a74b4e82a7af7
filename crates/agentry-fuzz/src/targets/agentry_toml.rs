//! `agentry.toml` read as the `agentry` command reads it: the file on its own, then layered
//! with `-c key=value` overrides, and the errors that point into it.
//!
//! Input: `-c key=value` lines (none or more), then the file's text.

use agentry_cli::config::{Config, ConfigError, LoadedConfig, Override};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A directory of the process's own: the file is written there, and it is the (empty) home of
/// the user's config, so no config of the machine joins the layers.
fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentry-fuzz-toml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        // SAFETY: set once, before any thread of this target reads the environment.
        unsafe { std::env::set_var("AGENTRY_HOME", dir.join("home")) };
        dir
    })
}

/// The config as JSON, to compare two readings.
fn shape(config: &Config) -> serde_json::Value {
    serde_json::to_value(config).expect("a config serializes")
}

/// Reads `data` as an `agentry.toml` with overrides; panics if a config that reads does not
/// write back as TOML that reads the same, or if an error cannot be shown.
pub fn run(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let mut text = input;
    let mut overrides = Vec::new();
    while let Some(rest) = text.strip_prefix("-c ") {
        let (given, after) = rest.split_once('\n').unwrap_or((rest, ""));
        match Override::parse(given) {
            Ok(o) => overrides.push(o),
            Err(e) => assert!(!e.is_empty()),
        }
        text = after;
    }
    let path = home().join("agentry.toml");
    match LoadedConfig::parse(text, &path, home().to_path_buf()) {
        Ok(mut file) => {
            let written = toml::to_string(&file.config)
                .unwrap_or_else(|e| panic!("a config that reads does not write: {e}"));
            let again = LoadedConfig::parse(&written, &path, home().to_path_buf())
                .unwrap_or_else(|e| panic!("written as\n{written}\nit does not read back: {e}"));
            assert_eq!(
                shape(&again.config),
                shape(&file.config),
                "written as\n{written}"
            );
            let _ = file.first_agent();
            let _ = file.agent_mut(None);
            let _ = file.error_at(0..text.len(), "everything").to_string();
            let _ = file
                .error_at(text.len() / 2..text.len(), "the second half")
                .to_string();
        }
        Err(e) => shown(&e),
    }
    if overrides.is_empty() {
        return;
    }
    // Layered as a command line would: the file written where the command reads it.
    std::fs::write(&path, text).expect("the file is written");
    match LoadedConfig::layered(Some(&path), &overrides) {
        Ok(file) => assert_eq!(file.layers.len(), overrides.len()),
        Err(e) => shown(&e),
    }
}

/// Shows an error as the command prints it; it names the file or says what was wrong.
fn shown(e: &ConfigError) {
    let shown = e.to_string();
    assert!(!shown.is_empty());
}
