//! Claude Code plugins as Claude Code finds them: the `enabledPlugins` of its settings files,
//! and where `claude plugin install` put each one (`~/.claude/plugins/installed_plugins.json`,
//! else its cache, `~/.claude/plugins/cache/<marketplace>/<plugin>/<version>`).

use crate::error::SettingsError;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Claude Code's configuration directory: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .unwrap_or_else(|| PathBuf::from(".claude"))
}

/// A plugin a settings file enables, and where it is installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnabledPlugin {
    /// Its id as `enabledPlugins` names it: `name@marketplace`.
    pub id: String,
    /// Its directory, `None` when it is enabled but not installed.
    pub root: Option<PathBuf>,
}

/// The plugins `settings_files` enable, in the order they are first named: each file's
/// `enabledPlugins` (`{"name@marketplace": true}`), a later file overriding an earlier one (as
/// Claude Code's local settings override the project's, which override the user's), each with
/// where Claude Code installed it (see [`installed_plugin`]). Files that do not exist are
/// skipped.
pub fn enabled_plugins(
    settings_files: &[impl AsRef<Path>],
) -> Result<Vec<EnabledPlugin>, SettingsError> {
    let mut enabled: Vec<(String, bool)> = Vec::new();
    for path in settings_files {
        let path = path.as_ref();
        let text = match crate::read_config_file(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(SettingsError::new(
                    path.display().to_string(),
                    format!("cannot read it: {e}"),
                ));
            }
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            SettingsError::new(path.display().to_string(), format!("not valid JSON: {e}"))
        })?;
        let Some(plugins) = value.get("enabledPlugins").and_then(Value::as_object) else {
            continue;
        };
        for (id, on) in plugins {
            let on = on.as_bool().unwrap_or(false);
            match enabled.iter_mut().find(|(known, _)| known == id) {
                Some(entry) => entry.1 = on,
                None => enabled.push((id.clone(), on)),
            }
        }
    }
    Ok(enabled
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(id, _)| EnabledPlugin {
            root: installed_plugin(&id),
            id,
        })
        .collect())
}

/// Where Claude Code installed plugin `id` (`name@marketplace`): the `installPath` that
/// `installed_plugins.json` records for it (either of its formats), else the newest version in
/// the cache, else the marketplace's own copy (`marketplaces/<marketplace>/plugins/<name>`).
pub fn installed_plugin(id: &str) -> Option<PathBuf> {
    let plugins = claude_config_dir().join("plugins");
    if let Ok(text) = crate::read_config_file(&plugins.join("installed_plugins.json"))
        && let Ok(registry) = serde_json::from_str::<Value>(&text)
        && let Some(entry) = registry.get("plugins").and_then(|p| p.get(id))
    {
        // Version 2: a list of installations (one per scope); version 1: one object.
        let install_path = match entry {
            Value::Array(installs) => installs
                .iter()
                .find_map(|i| i.get("installPath").and_then(Value::as_str)),
            other => other.get("installPath").and_then(Value::as_str),
        };
        if let Some(path) = install_path.map(PathBuf::from)
            && path.is_dir()
        {
            return Some(path);
        }
    }
    let (name, marketplace) = id.split_once('@')?;
    let cached = plugins.join("cache").join(marketplace).join(name);
    let newest = std::fs::read_dir(&cached)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    if let Some(version) = newest {
        return Some(version.path());
    }
    let bundled = plugins
        .join("marketplaces")
        .join(marketplace)
        .join("plugins")
        .join(name);
    bundled.is_dir().then_some(bundled)
}

/// The name a plugin at `root` goes by: its manifest's (`.claude-plugin/plugin.json`), else its
/// directory's.
pub(crate) fn plugin_name(root: &Path) -> String {
    crate::read_config_file(&root.join(".claude-plugin").join("plugin.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|m| m.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "plugin".into())
        })
}

/// The hooks file of the plugin at `root`: the one its manifest names (`"hooks":
/// "./config/hooks.json"`), else `hooks/hooks.json`.
pub(crate) fn plugin_hooks_file(root: &Path) -> PathBuf {
    crate::read_config_file(&root.join(".claude-plugin").join("plugin.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|m| m.get("hooks").and_then(Value::as_str).map(|p| root.join(p)))
        .unwrap_or_else(|| root.join("hooks").join("hooks.json"))
}
