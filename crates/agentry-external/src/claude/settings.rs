//! Claude Code's settings format: `{"hooks": {Event: [{"matcher": ..., "hooks": [handler, ...]}]}}`.

use super::EventName;
use crate::command::{CommandSpec, PersistentSpec};
use crate::error::SettingsError;
use crate::handler::HandlerSpec;
use crate::matcher::Matcher;
use crate::webhook::WebhookSpec;
use serde_json::{Map, Value, json};
use std::path::Path;

/// One matcher group of one event: the handlers to run when the matcher applies.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub(crate) event: EventName,
    /// The matcher as written (`None` when absent).
    pub(crate) matcher_source: Option<String>,
    pub(crate) matcher: Matcher,
    pub(crate) hooks: Vec<HandlerSpec>,
    /// Where the group was declared (a settings file), to name its handlers in errors and
    /// events; `None` for settings built in code.
    pub(crate) source: Option<std::sync::Arc<str>>,
    /// The plugin that declared the group, whose directories its commands get.
    pub(crate) plugin: Option<std::sync::Arc<Plugin>>,
}

/// A Claude Code plugin's directories: its root (`CLAUDE_PLUGIN_ROOT`) and where it keeps data
/// (`CLAUDE_PLUGIN_DATA`).
#[derive(Debug)]
pub(crate) struct Plugin {
    pub(crate) root: std::path::PathBuf,
    pub(crate) data: std::path::PathBuf,
}

impl Plugin {
    /// `env` with the plugin's variables, which exec-form commands also have substituted.
    pub(crate) fn with_vars(&self, env: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = env.to_vec();
        env.retain(|(k, _)| k != "CLAUDE_PLUGIN_ROOT" && k != "CLAUDE_PLUGIN_DATA");
        env.push(("CLAUDE_PLUGIN_ROOT".into(), self.root.display().to_string()));
        env.push(("CLAUDE_PLUGIN_DATA".into(), self.data.display().to_string()));
        env
    }
}

/// The command hooks and webhooks a settings file declares, read as Claude Code reads them: a
/// `.claude/settings.json`, a `settings.local.json`, `~/.claude/settings.json` or a plugin's
/// `hooks/hooks.json`, as they are.
///
/// Other settings (permissions, env, ...) are ignored; so are unknown event names and handler
/// types other than `command` and `http` (`prompt`, `agent`, `mcp_tool`), each with a
/// [warning](Self::warnings). `"disableAllHooks": true` turns every hook off. A matcher that is
/// not a valid regular expression, a handler without a command, or an `http` handler without a
/// usable URL is an error naming where it is. `http` handlers are [`WebhookSpec`]s: their header
/// values and secret stay as written (`${VAR}`), here and in [`to_value`](Self::to_value).
///
/// ```
/// use agentry_external::HookSettings;
/// let settings = HookSettings::from_json(r#"{
///   "hooks": {
///     "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}],
///     "PreToolUs": [{"hooks": [{"type": "command", "command": "true"}]}]
///   }
/// }"#).unwrap();
/// assert_eq!(settings.len(), 1);
/// assert_eq!(
///     settings.warnings(),
///     ["hooks.PreToolUs: unknown event name (did you mean `PreToolUse`?); its hooks are ignored"]
/// );
/// ```
#[derive(Clone, Debug, Default)]
pub struct HookSettings {
    pub(crate) groups: Vec<Group>,
    warnings: Vec<String>,
}

impl HookSettings {
    /// No hooks.
    pub fn new() -> Self {
        HookSettings::default()
    }

    /// Reads settings from JSON text.
    pub fn from_json(text: &str) -> Result<HookSettings, SettingsError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| SettingsError::new("settings", format!("not valid JSON: {e}")))?;
        HookSettings::from_value(&value)
    }

    /// Reads settings from a file.
    pub fn load(path: impl AsRef<Path>) -> Result<HookSettings, SettingsError> {
        let path = path.as_ref();
        let text = crate::read_config_file(path).map_err(|e| {
            SettingsError::new(path.display().to_string(), format!("cannot read it: {e}"))
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            SettingsError::new(path.display().to_string(), format!("not valid JSON: {e}"))
        })?;
        Ok(HookSettings::from_value(&value)
            .map_err(|e| e.in_file(path))?
            .with_source(path.display().to_string()))
    }

    /// Reads the hooks of the Claude Code plugin at `root` (its `hooks/hooks.json`, or the file
    /// its `.claude-plugin/plugin.json` names), as Claude Code runs an installed plugin's: its
    /// commands get `CLAUDE_PLUGIN_ROOT` (the plugin's directory) and `CLAUDE_PLUGIN_DATA`
    /// (`$AGENTRY_HOME/plugins/data/<plugin>`, by the manifest's name, created), as
    /// variables and substituted into exec-form commands, and are named `plugin <name>` in
    /// errors and events. Merge it with the other settings ([`merge`](Self::merge)) so its
    /// answers merge with theirs.
    pub fn plugin(root: impl AsRef<Path>) -> Result<HookSettings, SettingsError> {
        let root = std::path::absolute(root.as_ref()).unwrap_or_else(|_| root.as_ref().into());
        let name = super::installed::plugin_name(&root);
        let file = super::installed::plugin_hooks_file(&root);
        let mut settings = HookSettings::load(&file)?.with_source(format!("plugin {name}"));
        let data = super::site::agentry_home()
            .join("plugins")
            .join("data")
            .join(&name);
        std::fs::create_dir_all(&data).map_err(|e| {
            SettingsError::new(
                format!("plugin {name}"),
                format!("cannot create its data directory {}: {e}", data.display()),
            )
        })?;
        let plugin = std::sync::Arc::new(Plugin { root, data });
        for g in &mut settings.groups {
            g.plugin = Some(plugin.clone());
        }
        Ok(settings)
    }

    /// The handlers that refer to `${CLAUDE_PLUGIN_ROOT}` or `${CLAUDE_PLUGIN_DATA}` though no
    /// plugin declared them: the variable would be empty and the path wrong. Each as
    /// `event: command`.
    pub fn unresolved_plugin_refs(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.plugin.is_none())
            .flat_map(|g| g.hooks.iter().map(move |h| (g.event, h)))
            .filter(|(_, h)| {
                let text = h.display();
                text.contains("CLAUDE_PLUGIN_ROOT") || text.contains("CLAUDE_PLUGIN_DATA")
            })
            .map(|(event, h)| format!("{event}: {}", h.display()))
            .collect()
    }

    /// Reads the settings files at `paths` as one set of hooks, as Claude Code merges user,
    /// project, local and plugin settings: every matching handler of an event runs, their
    /// answers merge (deny > defer > ask > allow, every block reason kept), and an identical
    /// handler declared in two files runs once.
    pub fn load_all<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
    ) -> Result<HookSettings, SettingsError> {
        let mut all = HookSettings::new();
        for path in paths {
            all = all.merge(HookSettings::load(path)?);
        }
        Ok(all)
    }

    /// Names `source` (a file, a plugin) as where these settings' handlers come from, in
    /// errors and events (`./guard.sh (.claude/settings.json)`). [`load`](Self::load) names
    /// the file's path; call this after [`merge`](Self::merge)s only on the part it names.
    pub fn with_source(mut self, source: impl Into<String>) -> HookSettings {
        let source: std::sync::Arc<str> = source.into().into();
        for g in &mut self.groups {
            g.source = Some(source.clone());
        }
        self
    }

    /// Reads settings from a JSON value.
    pub fn from_value(value: &Value) -> Result<HookSettings, SettingsError> {
        let mut settings = HookSettings::default();
        let Some(top) = value.as_object() else {
            return Err(SettingsError::new("settings", "must be a JSON object"));
        };
        if top.get("disableAllHooks") == Some(&Value::Bool(true)) {
            return Ok(settings);
        }
        let Some(hooks) = top.get("hooks") else {
            return Ok(settings);
        };
        let Some(events) = hooks.as_object() else {
            return Err(SettingsError::new(
                "hooks",
                "must be an object of event names",
            ));
        };
        for (name, groups) in events {
            let at = format!("hooks.{name}");
            let Some(event) = EventName::parse(name) else {
                let close = EventName::claude_names().find(|known| {
                    known.eq_ignore_ascii_case(name)
                        || edits(known, name) <= (name.len() / 4).max(1)
                });
                let hint = match close {
                    Some(known) => format!(" (did you mean `{known}`?)"),
                    None => format!(
                        " (Claude Code's events: {})",
                        EventName::claude_names().collect::<Vec<_>>().join(", ")
                    ),
                };
                settings.warnings.push(format!(
                    "{at}: unknown event name{hint}; its hooks are ignored"
                ));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                return Err(SettingsError::new(at, "must be a list of matcher groups"));
            };
            for (i, group) in groups.iter().enumerate() {
                settings.read_group(event, group, &format!("{at}[{i}]"))?;
            }
        }
        Ok(settings)
    }

    fn read_group(
        &mut self,
        event: EventName,
        group: &Value,
        at: &str,
    ) -> Result<(), SettingsError> {
        let Some(group) = group.as_object() else {
            return Err(SettingsError::new(at, "must be an object with `hooks`"));
        };
        let matcher_source = match group.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(SettingsError::new(
                    format!("{at}.matcher"),
                    "must be a string",
                ));
            }
        };
        let matcher = Matcher::parse(matcher_source.as_deref().unwrap_or("")).map_err(|e| {
            SettingsError::new(
                format!("{at}.matcher"),
                format!("not a valid regular expression: {e}"),
            )
        })?;
        if matcher_source
            .as_deref()
            .is_some_and(|m| !m.is_empty() && m != "*")
            && !event.has_matcher()
        {
            self.warnings.push(format!(
                "{at}.matcher: {event} has no matcher; its hooks always fire"
            ));
        }
        let handlers = match group.get("hooks") {
            Some(Value::Array(h)) => h,
            _ => {
                return Err(SettingsError::new(
                    format!("{at}.hooks"),
                    "must be a list of handlers",
                ));
            }
        };
        let mut hooks = Vec::new();
        for (j, handler) in handlers.iter().enumerate() {
            let hat = format!("{at}.hooks[{j}]");
            let kind = handler
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("command");
            let read = |e: serde_json::Error| SettingsError::new(hat.clone(), e.to_string());
            let spec = match kind {
                "command" => {
                    let spec: CommandSpec =
                        serde_json::from_value(handler.clone()).map_err(read)?;
                    HandlerSpec::Command(spec)
                }
                "http" => HandlerSpec::Http(WebhookSpec::from_settings(
                    handler,
                    &hat,
                    event,
                    &mut self.warnings,
                )?),
                "persistent" => {
                    let spec: PersistentSpec =
                        serde_json::from_value(handler.clone()).map_err(read)?;
                    HandlerSpec::Persistent(spec)
                }
                _ => {
                    self.warnings.push(format!(
                        "{hat}: `{kind}` handlers are not supported here; ignored"
                    ));
                    continue;
                }
            };
            if spec_command(&spec).trim().is_empty() {
                return Err(SettingsError::new(format!("{hat}.command"), "is empty"));
            }
            check_shell(&spec).map_err(|e| SettingsError::new(format!("{hat}.shell"), e))?;
            hooks.push(spec);
        }
        if !hooks.is_empty() {
            self.groups.push(Group {
                event,
                matcher_source,
                matcher,
                hooks,
                source: None,
                plugin: None,
            });
        }
        Ok(())
    }

    /// Adds the hooks of `other` after these: settings from several files merge, as in Claude
    /// Code (an identical handler declared twice still runs once per event).
    pub fn merge(mut self, other: HookSettings) -> HookSettings {
        self.groups.extend(other.groups);
        self.warnings.extend(other.warnings);
        self
    }

    /// Adds one handler for `event` under `matcher` (`"*"` or `""` for every one).
    pub fn add(
        &mut self,
        event: EventName,
        matcher: &str,
        spec: impl Into<HandlerSpec>,
    ) -> Result<&mut Self, SettingsError> {
        let parsed = Matcher::parse(matcher).map_err(|e| {
            SettingsError::new(
                format!("{event} matcher `{matcher}`"),
                format!("not a valid regular expression: {e}"),
            )
        })?;
        let spec = spec.into();
        check_shell(&spec)
            .map_err(|e| SettingsError::new(format!("{event} handler `{}`", spec.display()), e))?;
        self.groups.push(Group {
            event,
            matcher_source: (!matcher.is_empty()).then(|| matcher.to_string()),
            matcher: parsed,
            hooks: vec![spec],
            source: None,
            plugin: None,
        });
        Ok(self)
    }

    /// The number of handlers (commands and webhooks).
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.hooks.len()).sum()
    }

    /// True when there is no handler.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// What was ignored while reading, and where.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The settings only if nothing in them was ignored: an unknown event name, a handler type
    /// that is not supported, a matcher on an event without one, an option that conflicts with
    /// its event (retries on a deciding webhook, ...) is then an error naming where it is, and
    /// nothing is registered. Claude Code itself ignores these; use this where a typo must not
    /// leave a guard silently off.
    ///
    /// ```
    /// use agentry_external::HookSettings;
    /// let typo = r#"{"hooks": {"PreToolUs": [{"hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#;
    /// assert_eq!(HookSettings::from_json(typo).unwrap().len(), 0);
    /// let err = HookSettings::from_json(typo).unwrap().strict().unwrap_err();
    /// assert_eq!(err.at(), "hooks.PreToolUs");
    /// ```
    pub fn strict(self) -> Result<HookSettings, SettingsError> {
        match self.warnings.first() {
            None => Ok(self),
            Some(warning) => {
                let (at, message) = warning.split_once(": ").unwrap_or(("settings", warning));
                // An error, not a warning: nothing is left out, the settings are refused.
                let message = message
                    .trim_end_matches("; its hooks are ignored")
                    .trim_end_matches("; ignored");
                Err(SettingsError::new(at, message))
            }
        }
    }

    /// The settings as Claude Code's format (command and http handlers): the data a run stores
    /// to get its hooks back when it resumes in another process. Webhook header values and
    /// secrets are their `${VAR}` templates, never what the variables hold.
    pub fn to_value(&self) -> Value {
        let mut events: Map<String, Value> = Map::new();
        for g in &self.groups {
            let mut group = Map::new();
            if let Some(m) = &g.matcher_source {
                group.insert("matcher".into(), Value::String(m.clone()));
            }
            let hooks = g.hooks.iter().map(HandlerSpec::to_value).collect();
            group.insert("hooks".into(), Value::Array(hooks));
            let list = events
                .entry(g.event.name())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.push(Value::Object(group));
            }
        }
        json!({ "hooks": events })
    }
}

/// The command a handler runs.
fn spec_command(spec: &HandlerSpec) -> &str {
    match spec {
        HandlerSpec::Command(c) => &c.command,
        HandlerSpec::Persistent(p) => &p.command,
        // A webhook's URL was checked when it was read.
        HandlerSpec::Http(_) => "-",
    }
}

/// The error of a command or a persistent process whose `shell` names no shell hooks run in.
fn check_shell(spec: &HandlerSpec) -> Result<(), String> {
    match spec {
        HandlerSpec::Command(command) => command.shell_kind().map(|_| ()),
        HandlerSpec::Persistent(process) => process.command_spec().shell_kind().map(|_| ()),
        HandlerSpec::Http(_) => Ok(()),
    }
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions), for
/// suggesting the event name a misspelt one meant.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_full_settings_file() {
        let s = HookSettings::from_json(
            r#"{
              "permissions": {"allow": ["Bash(npm test)"]},
              "hooks": {
                "PreToolUse": [
                  {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "a"}, {"type": "http", "url": "http://x"}]},
                  {"hooks": [{"type": "command", "command": "b", "timeout": 3}]}
                ],
                "Stop": [{"matcher": "ignored", "hooks": [{"type": "prompt", "prompt": "p"}, {"type": "command", "command": "c"}]}],
                "FutureEvent": [{"hooks": []}]
              }
            }"#,
        )
        .unwrap();
        assert_eq!(s.len(), 4, "the http handler is a webhook");
        assert_eq!(s.warnings().len(), 3, "{:?}", s.warnings());
        let back = HookSettings::from_value(&s.to_value()).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(
            back.warnings().len(),
            1,
            "the matcher on Stop stays, and is still ignored"
        );
    }

    #[test]
    fn errors_say_where() {
        let e = HookSettings::from_json(
            r#"{"hooks": {"PreToolUse": [{"matcher": "Edit(", "hooks": []}]}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("hooks.PreToolUse[0].matcher"), "{e}");
        let e =
            HookSettings::from_json(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#)
                .unwrap_err();
        assert!(e.to_string().contains("hooks.Stop[0].hooks[0]"), "{e}");
    }

    #[test]
    fn disable_all_hooks() {
        let s = HookSettings::from_json(
            r#"{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        assert!(s.is_empty());
    }
}
