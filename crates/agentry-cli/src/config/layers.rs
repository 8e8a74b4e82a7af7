//! The config a command works with, in layers: the user's config (`~/.agentry/config.toml`),
//! then the project's `agentry.toml`, then its local settings (`.agentry/local.toml`, which
//! agentry writes, as when a person answers `always` at an approval prompt), then
//! `-c key=value` overrides. A later layer's keys replace an earlier one's, tables merge key by
//! key, and the `allowed_tools` lists add up.

use super::load::locate;
use super::{ConfigError, LoadedConfig};
pub use agentry_external::agentry_home;
use std::path::PathBuf;

/// The file name of the user's config, in `$AGENTRY_HOME` (`~/.agentry`).
pub(super) const USER_FILE_NAME: &str = "config.toml";

/// The user's config file: `$AGENTRY_HOME/config.toml` (`~/.agentry/config.toml`), whether or
/// not it exists.
fn user_config_path() -> PathBuf {
    agentry_home().join(USER_FILE_NAME)
}

/// One `-c key=value`: a dotted key (`agents.helper.max_steps`) and a TOML value (`20`,
/// `"openai:gpt-4.1"`, `["Read", "Bash"]`); a value that is not TOML is taken as a string.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The key's path.
    pub key: Vec<String>,
    /// The value.
    pub value: toml::Value,
    /// As given.
    pub given: String,
}

impl Override {
    /// Parses `key=value`.
    pub fn parse(given: &str) -> Result<Override, String> {
        let Some((key, value)) = given.split_once('=') else {
            return Err(format!(
                "`-c {given}`: write `-c key=value` (a dotted key: `-c agents.helper.max_steps=20`), or `--config FILE` for a config file"
            ));
        };
        let key: Vec<String> = key.trim().split('.').map(|k| k.trim().to_owned()).collect();
        if key.iter().any(String::is_empty) {
            return Err(format!(
                "`-c {given}`: the key is empty or has an empty part; write a dotted key such as `agents.helper.model`"
            ));
        }
        let value = value.trim();
        let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_owned()));
        Ok(Override {
            key,
            value,
            given: given.to_owned(),
        })
    }

    /// Sets the key in `table`, creating the tables on its path.
    fn apply(&self, table: &mut toml::Table) -> Result<(), String> {
        let (last, path) = self.key.split_last().expect("a key has a part");
        let mut at = table;
        for (i, part) in path.iter().enumerate() {
            let entry = at
                .entry(part.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            at = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(format!(
                        "`-c {}`: `{}` is not a table",
                        self.given,
                        self.key[..=i].join(".")
                    ));
                }
            };
        }
        at.insert(last.clone(), self.value.clone());
        Ok(())
    }
}

/// The config file and the overrides a command line names: `--config FILE`, and each `-c`
/// (`key=value`, or a file name as `--config` takes).
pub fn sources(
    config: Option<&std::path::Path>,
    set: &[String],
) -> Result<(Option<PathBuf>, Vec<Override>), String> {
    let mut file = config.map(std::path::Path::to_path_buf);
    let mut overrides = Vec::new();
    for given in set {
        if given.contains('=') {
            overrides.push(Override::parse(given)?);
        } else if file.is_none() {
            file = Some(PathBuf::from(given));
        } else {
            return Err(format!(
                "`-c {given}`: a config file is already named; write `-c key=value` to set a key"
            ));
        }
    }
    Ok((file, overrides))
}

/// The key whose lists add up across layers.
const ADDED_UP: &str = "allowed_tools";

/// The local settings of the project `project` (its `.agentry/local.toml`), or of the user when
/// there is no project file (`$AGENTRY_HOME/local.toml`): written by agentry, read as a layer
/// over the project's file.
pub fn local_config_path(project: &LoadedConfig) -> PathBuf {
    match &project.path {
        Some(_) => project.base_dir.join(".agentry").join("local.toml"),
        None => agentry_home().join("local.toml"),
    }
}

/// Adds `tool` to the `allowed_tools` of the local settings file `path` (created when absent).
pub fn allow_always(path: &std::path::Path, tool: &str) -> Result<(), String> {
    let mut table = match agentry_external::read_config_file(path) {
        Ok(text) => {
            toml::from_str::<toml::Table>(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let list = table
        .entry(ADDED_UP)
        .or_insert_with(|| toml::Value::Array(Vec::new()));
    let toml::Value::Array(list) = list else {
        return Err(format!("{}: `{ADDED_UP}` is not a list", path.display()));
    };
    if !list.iter().any(|v| v.as_str() == Some(tool)) {
        list.push(toml::Value::String(tool.to_owned()));
    }
    let text = format!(
        "# This project's local agentry settings, over agentry.toml: written by `agentry` (an
# `always` answer at an approval prompt adds a tool to allowed_tools). Not meant to be shared.
{}",
        toml::to_string(&table).map_err(|e| e.to_string())?
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Merges `over` into `base`: tables key by key, the `allowed_tools` lists added up, anything
/// else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (Some(toml::Value::Array(b)), toml::Value::Array(o)) if key == ADDED_UP => {
                for item in o {
                    if !b.contains(&item) {
                        b.push(item);
                    }
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

impl LoadedConfig {
    /// The config a command works with: the user's config (when it exists), the project's
    /// file (`path`, else the nearest `agentry.toml`), and `overrides`, merged in that order.
    /// Each file is checked on its own first, so its errors point into it.
    pub fn layered(
        path: Option<&std::path::Path>,
        overrides: &[Override],
    ) -> Result<LoadedConfig, ConfigError> {
        let project = Self::find(path)?;
        let user_path = user_config_path();
        let user = if user_path.is_file() {
            Some(Self::read(&user_path)?)
        } else {
            None
        };
        let local_path = local_config_path(&project);
        let local = if local_path.is_file() {
            Some(Self::read(&local_path)?)
        } else {
            None
        };
        if user.is_none() && local.is_none() && overrides.is_empty() {
            return Ok(project);
        }
        let table = |file: &LoadedConfig| {
            toml::from_str::<toml::Table>(&file.text).map_err(|e| file.error(e.to_string()))
        };
        let mut merged = match &user {
            Some(user) => table(user)?,
            None => toml::Table::new(),
        };
        merge(&mut merged, table(&project)?);
        if let Some(local) = &local {
            merge(&mut merged, table(local)?);
        }
        for o in overrides {
            o.apply(&mut merged).map_err(|e| project.error(e))?;
        }
        let mut layers = Vec::new();
        for file in user.iter().chain(local.iter()) {
            layers.push(file.shown());
        }
        layers.extend(overrides.iter().map(|o| format!("-c {}", o.given)));
        let shown = format!("{} (merged with {})", project.shown(), layers.join(", "));
        let text = toml::to_string(&merged).map_err(|e| project.error(e.to_string()))?;
        let mut config: super::Config = toml::from_str(&text).map_err(|e| {
            let message = e.message().trim_end().to_owned();
            match e.span() {
                Some(span) => ConfigError::At(locate(&shown, &text, span, message)),
                None => ConfigError::Invalid {
                    path: shown.clone(),
                    message,
                },
            }
        })?;
        // The first agent is the first one the project's file declares, not the first of the
        // merged (sorted) text.
        if config.default_agent.is_none()
            && let Some(first) = project.first_agent()
        {
            config.default_agent = Some(toml::Spanned::new(0..0, first));
        }
        Ok(LoadedConfig {
            config,
            path: project.path.clone(),
            text,
            base_dir: project.base_dir.clone(),
            layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_toml_values_and_fall_back_to_strings() {
        let o = Override::parse("agents.helper.max_steps=20").unwrap();
        assert_eq!(o.key, ["agents", "helper", "max_steps"]);
        assert_eq!(o.value, toml::Value::Integer(20));
        let o = Override::parse("agents.a.model=openai:gpt-4.1").unwrap();
        assert_eq!(o.value, toml::Value::String("openai:gpt-4.1".into()));
        let o = Override::parse("agents.a.tools=[\"Read\", \"Bash\"]").unwrap();
        assert!(matches!(o.value, toml::Value::Array(ref a) if a.len() == 2));
        assert!(Override::parse("agentry.toml").is_err());
        assert!(Override::parse("agents..model=x").is_err());
    }

    #[test]
    fn later_layers_win_and_tables_merge() {
        let mut base: toml::Table =
            toml::from_str("[agents.a]\nmodel = \"local\"\nmax_steps = 3\n").unwrap();
        base.insert(
            "allowed_tools".into(),
            toml::Value::Array(vec!["Read".into()]),
        );
        let over: toml::Table =
            toml::from_str("allowed_tools = [\"Bash\", \"Read\"]\n[agents.a]\nmax_steps = 9\n")
                .unwrap();
        merge(&mut base, over);
        Override::parse("agents.a.temperature=0.5")
            .unwrap()
            .apply(&mut base)
            .unwrap();
        let a = &base["agents"]["a"];
        assert_eq!(a["model"].as_str(), Some("local"));
        assert_eq!(a["max_steps"].as_integer(), Some(9));
        assert_eq!(a["temperature"].as_float(), Some(0.5));
        let allowed: Vec<&str> = base["allowed_tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(toml::Value::as_str)
            .collect();
        assert_eq!(allowed, ["Read", "Bash"], "the lists add up");
        let err = Override::parse("agents.a.model.x=1")
            .unwrap()
            .apply(&mut base)
            .unwrap_err();
        assert!(err.contains("`agents.a.model` is not a table"), "{err}");
    }
}
