//! The hooks a `[hooks]` table declares, built.

use crate::config::{
    ConfigError, FinishGateConfig, GuardsConfig, HooksConfig, LoadedConfig, PolicyDefault,
    RedactionConfig, ToolPolicyConfig,
};
use agentry::builtins::{ArgRule, FinishGate, Guards, Redactor, ToolPolicy};
use agentry::hooks::{HookRegistration, IntoHook};
use agentry_external::{CommandHooks, HookSettings, Sessions};
use regex::Regex;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One hook built from config, with the name `agentry hooks list` shows.
pub(crate) struct BuiltHook {
    /// What it is (`guards`, `tool_policy`, `command hooks of .claude/settings.json`).
    pub name: String,
    /// What it does, in a few words.
    pub summary: String,
    /// The hook.
    pub hook: HookRegistration,
    /// For command hooks: the handle that ends a conversation's session (SessionEnd).
    pub sessions: Option<Sessions>,
}

/// Builds the built-in hooks of one `[hooks]` table (`scope` names it in errors: `hooks`,
/// `agents.NAME.hooks`). Redaction is not among them: it is the runtime's redactor
/// ([`redactor`]) as well as a hook; nor are its Claude Code hooks ([`ClaudeSet`]).
pub(crate) fn build(hooks: &HooksConfig, scope: &str) -> Result<Vec<BuiltHook>, String> {
    let mut out = Vec::new();
    if let Some(guards) = &hooks.guards {
        out.push(BuiltHook {
            name: "guards".into(),
            summary: guards_summary(guards),
            hook: guards_hook(guards).into_hook(),
            sessions: None,
        });
    }
    if let Some(policy) = &hooks.tool_policy {
        out.push(BuiltHook {
            name: "tool_policy".into(),
            summary: policy_summary(policy),
            hook: tool_policy(policy)
                .map_err(|e| format!("{scope}.tool_policy: {e}"))?
                .into_hook(),
            sessions: None,
        });
    }
    if let Some(redaction) = &hooks.redaction {
        let redactor = redactor(redaction).map_err(|e| format!("{scope}.redaction: {e}"))?;
        out.push(BuiltHook {
            name: "redaction".into(),
            summary: "masks secrets in tool inputs and results".into(),
            hook: redactor.into_hook(),
            sessions: None,
        });
    }
    if let Some(gate) = &hooks.finish_gate {
        out.push(BuiltHook {
            name: "finish_gate".into(),
            summary: gate_summary(gate),
            hook: finish_gate(gate)
                .map_err(|e| format!("{scope}.finish_gate: {e}"))?
                .into_hook(),
            sessions: None,
        });
    }
    Ok(out)
}

/// The Claude Code hooks of one `[hooks]` table: its settings files, plugins and `events`, as
/// one set (Claude Code merges its settings sources: all matching handlers of an event run,
/// their answers merge, deny > defer > ask > allow).
#[derive(Clone)]
pub(crate) struct ClaudeSet {
    settings: HookSettings,
    sources: Vec<String>,
    fail_closed: bool,
    see_secrets: bool,
    /// The project directory (`CLAUDE_PROJECT_DIR`, the commands' working directory): the one
    /// holding the `.claude` directory of the first settings file in one, else the config's.
    project_dir: Option<std::path::PathBuf>,
}

impl ClaudeSet {
    /// The set of table `hooks` (`scope` names it in errors); `None` when it declares none.
    pub(crate) fn of(
        hooks: &HooksConfig,
        scope: &str,
        file: &LoadedConfig,
    ) -> Result<Option<ClaudeSet>, String> {
        let mut settings = HookSettings::new();
        let mut sources = Vec::new();
        for path in &hooks.settings_files {
            let resolved = file.resolve(path);
            let loaded = HookSettings::load(&resolved)
                .map_err(|e| format!("{scope}.settings_files: {e}"))?;
            for warning in loaded.warnings() {
                eprintln!("warning: {}: {warning}", resolved.display());
            }
            unresolved(&loaded, &format!("{scope}.settings_files: {path}"))?;
            settings = settings.merge(loaded.with_source(path.clone()));
            sources.push(path.clone());
        }
        // The plugins the settings files enable, where Claude Code installed them.
        let files: Vec<_> = hooks
            .settings_files
            .iter()
            .map(|p| file.resolve(p))
            .collect();
        let named: Vec<_> = hooks
            .plugins
            .iter()
            .map(|p| std::path::absolute(file.resolve(p)).unwrap_or_else(|_| file.resolve(p)))
            .collect();
        for plugin in agentry_external::enabled_plugins(&files)
            .map_err(|e| format!("{scope}.settings_files: {e}"))?
        {
            let Some(root) = plugin.root else {
                eprintln!(
                    "warning: plugin {} is enabled in {scope}.settings_files but not installed in {} (`claude plugin install {}`, or name its directory in `plugins`); its hooks do not run",
                    plugin.id,
                    agentry_external::claude_config_dir()
                        .join("plugins")
                        .display(),
                    plugin.id
                );
                continue;
            };
            if named.contains(&root) {
                continue;
            }
            let loaded = HookSettings::plugin(&root)
                .map_err(|e| format!("{scope}.settings_files: plugin {}: {e}", plugin.id))?;
            for warning in loaded.warnings() {
                eprintln!("warning: plugin {}: {warning}", plugin.id);
            }
            settings = settings.merge(loaded);
            sources.push(format!("plugin {}", plugin.id));
        }
        for path in &hooks.plugins {
            let loaded = HookSettings::plugin(file.resolve(path))
                .map_err(|e| format!("{scope}.plugins: {e}"))?;
            for warning in loaded.warnings() {
                eprintln!("warning: plugin {path}: {warning}");
            }
            settings = settings.merge(loaded);
            sources.push(format!("plugin {path}"));
        }
        if !hooks.events.is_empty() {
            let events: BTreeMap<&String, Vec<&Value>> = hooks
                .events
                .iter()
                .map(|(event, entries)| (event, entries.iter().map(|e| e.get_ref()).collect()))
                .collect();
            let events = HookSettings::from_value(&json!({ "hooks": events }))
                .map_err(|e| format!("{scope}.events: {e}"))?
                .strict()
                .map_err(|e| format!("{scope}.events: {e}"))?;
            unresolved(&events, &format!("{scope}.events"))?;
            settings = settings.merge(events.with_source(format!("{scope}.events")));
            sources.push(format!("{scope}.events"));
        }
        let project_dir = files.iter().find_map(|f| {
            let dir = std::path::absolute(f).ok()?.parent()?.to_path_buf();
            (dir.file_name()? == ".claude").then(|| dir.parent().map(Into::into))?
        });
        Ok((!sources.is_empty()).then_some(ClaudeSet {
            settings,
            sources,
            fail_closed: hooks.fail_closed,
            see_secrets: hooks.see_secrets,
            project_dir,
        }))
    }

    /// This set and `more` as one (an agent's own after every run's).
    pub(crate) fn and(mut self, more: ClaudeSet) -> ClaudeSet {
        self.settings = self.settings.merge(more.settings);
        self.sources.extend(more.sources);
        self.fail_closed |= more.fail_closed;
        // One set: it sees secrets only when both were configured to.
        self.see_secrets &= more.see_secrets;
        self.project_dir = self.project_dir.or(more.project_dir);
        self
    }

    /// The hook the set runs as, on the runs `scope` picks.
    pub(crate) fn build(self, file: &LoadedConfig, scope: RunsOf) -> BuiltHook {
        let count = self.settings.len();
        let project_dir = self.project_dir.unwrap_or_else(|| file.base_dir.clone());
        let mut hooks = CommandHooks::new(self.settings).project_dir(project_dir);
        if self.fail_closed {
            hooks = hooks.fail_closed();
        }
        if self.see_secrets {
            hooks = hooks.see_secrets();
        }
        hooks = match scope {
            RunsOf::EveryAgentBut(agents) if agents.is_empty() => hooks,
            RunsOf::EveryAgentBut(agents) => hooks.except_agents(agents),
            RunsOf::Agent(agent) => hooks.only_for_agent(agent),
        };
        let (hook, sessions) = hooks.into_hook_and_sessions();
        BuiltHook {
            name: format!("command hooks of {}", self.sources.join(", ")),
            summary: format!("{count} handler(s), merged as Claude Code merges its settings"),
            hook,
            sessions: Some(sessions),
        }
    }
}

/// The runs a set of Claude Code hooks acts on.
pub(crate) enum RunsOf {
    /// Every run but those of these agents (which have a set of their own, this one included).
    EveryAgentBut(Vec<String>),
    /// Only this agent's runs.
    Agent(String),
}

/// True when table `hooks` declares Claude Code hooks (settings files, plugins, events).
pub(crate) fn has_claude_hooks(hooks: &HooksConfig) -> bool {
    !hooks.settings_files.is_empty() || !hooks.plugins.is_empty() || !hooks.events.is_empty()
}

/// Checks each entry of `hooks.events` (of table `scope`) on its own, so a mistake is reported
/// at its line: an unknown event, a handler type or field Claude Code's format does not have.
pub(crate) fn check_events(
    hooks: &HooksConfig,
    scope: &str,
    file: &LoadedConfig,
) -> Result<(), ConfigError> {
    for (event, entries) in &hooks.events {
        for (i, entry) in entries.iter().enumerate() {
            let one = json!({ "hooks": { event: [entry.get_ref()] } });
            let checked = HookSettings::from_value(&one)
                .map_err(|e| e.to_string())
                .and_then(|s| s.strict().map_err(|e| e.to_string()));
            if let Err(e) = checked {
                return Err(
                    file.error_at(entry.span(), format!("{scope}.events.{event}[{i}]: {e}"))
                );
            }
        }
    }
    Ok(())
}

/// An error when handlers of `settings` (from `place`) refer to a plugin's directories though no
/// plugin declares them: the path would be wrong at run time.
fn unresolved(settings: &HookSettings, place: &str) -> Result<(), String> {
    let refs = settings.unresolved_plugin_refs();
    if refs.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{place}: {} refer to ${{CLAUDE_PLUGIN_ROOT}} or ${{CLAUDE_PLUGIN_DATA}}, which only a \
         plugin's hooks have: load the plugin with `plugins = [\"path/to/plugin\"]` in [hooks] \
         (or --plugin-dir)",
        refs.join("; ")
    ))
}

fn guards_hook(g: &GuardsConfig) -> Guards {
    let mut guards = Guards::new();
    if let Some(n) = g.max_steps {
        guards = guards.max_steps(n);
    }
    if let Some(n) = g.max_tokens {
        guards = guards.max_tokens(n);
    }
    if let Some(t) = g.max_wall_time {
        guards = guards.max_wall_time(t.0);
    }
    if let Some(n) = g.max_repeated_calls {
        guards = guards.max_repeated_calls((n > 0).then_some(n));
    }
    guards
}

fn guards_summary(g: &GuardsConfig) -> String {
    let mut parts = Vec::new();
    if let Some(n) = g.max_steps {
        parts.push(format!("max {n} steps"));
    }
    if let Some(n) = g.max_tokens {
        parts.push(format!("max {n} tokens"));
    }
    if let Some(t) = g.max_wall_time {
        parts.push(format!("max {}", humantime::format_duration(t.0)));
    }
    match g.max_repeated_calls {
        Some(0) => parts.push("repeated calls allowed".into()),
        Some(n) => parts.push(format!("max {n} identical tool calls")),
        None => {}
    }
    if parts.is_empty() {
        "the default limits".into()
    } else {
        parts.join(", ")
    }
}

fn tool_policy(p: &ToolPolicyConfig) -> Result<ToolPolicy, String> {
    let mut b = match p.default {
        PolicyDefault::Allow => ToolPolicy::allow_by_default(),
        PolicyDefault::Deny => ToolPolicy::deny_unless_allowed(),
    };
    for a in &p.allow {
        b = b.allow(a);
    }
    for d in &p.deny {
        b = b.deny(d);
    }
    for r in &p.require_approval {
        b = b.require_approval(r);
    }
    for rule in &p.rules {
        let mut r = ArgRule::new(&rule.tools, &rule.pointer);
        if let Some(re) = &rule.must_not_match {
            r = r.must_not_match(re);
        }
        if let Some(re) = &rule.must_match {
            r = r.must_match(re);
        }
        b = b.rule(r);
    }
    b.build().map_err(|e| e.to_string())
}

fn policy_summary(p: &ToolPolicyConfig) -> String {
    let mut parts = vec![format!(
        "{} by default",
        match p.default {
            PolicyDefault::Allow => "allow",
            PolicyDefault::Deny => "deny",
        }
    )];
    if !p.allow.is_empty() {
        parts.push(format!("allow {}", p.allow.join(" ")));
    }
    if !p.deny.is_empty() {
        parts.push(format!("deny {}", p.deny.join(" ")));
    }
    if !p.require_approval.is_empty() {
        parts.push(format!("approval for {}", p.require_approval.join(" ")));
    }
    if !p.rules.is_empty() {
        parts.push(format!("{} argument rule(s)", p.rules.len()));
    }
    parts.join("; ")
}

/// The redactor `[hooks.redaction]` declares.
pub(crate) fn redactor(r: &RedactionConfig) -> Result<Redactor, String> {
    let mut redactor = if r.without_defaults {
        Redactor::without_defaults()
    } else {
        Redactor::new()
    };
    for p in &r.patterns {
        redactor = redactor.pattern(p).map_err(|e| e.to_string())?;
    }
    redactor = redactor.secrets_from_env(r.secrets_from_env.iter().map(String::as_str));
    if let Some(mask) = &r.mask {
        redactor = redactor.mask(mask);
    }
    if let Some(on) = r.tool_inputs {
        redactor = redactor.mask_tool_inputs(on);
    }
    if let Some(on) = r.tool_results {
        redactor = redactor.mask_tool_results(on);
    }
    Ok(redactor)
}

fn finish_gate(g: &FinishGateConfig) -> Result<FinishGate, String> {
    let compile = |re: &Option<String>, what: &str| {
        re.as_deref()
            .map(|re| {
                Regex::new(re).map_err(|e| format!("{what} `{re}` is not a valid regex: {e}"))
            })
            .transpose()
    };
    let must = compile(&g.must_match, "must_match")?;
    let must_not = compile(&g.must_not_match, "must_not_match")?;
    if must.is_none() && must_not.is_none() {
        return Err(
            "give `must_match` or `must_not_match` (a regex the answer is checked with)".into(),
        );
    }
    let mut gate = FinishGate::new(move |answer: &Value| {
        let text = match answer {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(re) = &must
            && !re.is_match(&text)
        {
            return Err(format!(
                "Your answer must match the pattern `{}`. Answer again so that it does.",
                re.as_str()
            ));
        }
        if let Some(re) = &must_not
            && let Some(m) = re.find(&text)
        {
            return Err(format!(
                "Your answer must not contain `{}` (matched the pattern `{}`). Answer again without it.",
                m.as_str(),
                re.as_str()
            ));
        }
        Ok(())
    });
    if let Some(n) = g.max_rejections {
        gate = gate.max_rejections(n);
    }
    Ok(gate)
}

fn gate_summary(g: &FinishGateConfig) -> String {
    let mut parts = Vec::new();
    if let Some(re) = &g.must_match {
        parts.push(format!("answer must match `{re}`"));
    }
    if let Some(re) = &g.must_not_match {
        parts.push(format!("answer must not match `{re}`"));
    }
    parts.join("; ")
}
