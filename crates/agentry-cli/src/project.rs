//! A config file, built: the runtime with its store and hooks, and the agents.

use crate::config::{AgentConfig, CompactionStrategy, ConfigError, LoadedConfig};
use crate::cost::{self, Cost, Price};
use crate::hooks::{self, BuiltHook};
use crate::model::Models;
use crate::tools;
use agentry::agent::Compaction;
use agentry::env_template::{self, Syntax};
use agentry::{Agent, RunOptions, RunStore, Runtime};
use agentry_external::Sessions;
use agentry_mcp::{McpConfig, McpServers};
use agentry_store::{PostgresStore, SqliteStore};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The agent type every configured agent has: no typed state, output as JSON (a text answer
/// is a JSON string).
pub(crate) type CliAgent = Agent<(), Value>;

pub(crate) use crate::config::{DEFAULT_AGENT, default_assistant};

/// What `agentry` works with: the config, the store, the runtime and the agents.
pub(crate) struct Project {
    /// The file.
    pub file: LoadedConfig,
    /// The store runs are checkpointed to.
    pub store: Arc<dyn RunStore>,
    /// What the store is (`sqlite:.agentry/runs.db`).
    pub store_label: String,
    /// The runtime: the store, the runtime-scope hooks and limits.
    pub runtime: Runtime,
    /// The agents, by name.
    pub agents: BTreeMap<String, CliAgent>,
    /// The runtime-scope hooks, as `hooks list` shows them.
    pub runtime_hooks: Vec<(String, String)>,
    /// Each agent's own hooks, as `hooks list` shows them.
    pub agent_hooks: BTreeMap<String, Vec<(String, String)>>,
    /// The agent `run` uses without `--agent`.
    pub default_agent: String,
    /// How each agent's model is priced (agents whose hosted model has no price are absent).
    pub prices: BTreeMap<String, Price>,
    /// The command hooks' session handles: a chat ends its session through them (SessionEnd).
    pub sessions: Vec<Sessions>,
    /// The MCP servers every run may use, when the file declares any.
    pub mcp: Option<McpServers>,
    /// The workspace's root: file tools' paths are relative to it.
    pub workspace: PathBuf,
}

impl Project {
    /// Builds everything `file` declares: opens the store, loads the models, builds tools and
    /// hooks. Errors name the place in the file.
    pub(crate) async fn open(file: LoadedConfig, models: &Models) -> Result<Project, ConfigError> {
        let config = &file.config;
        let (store, store_label) = open_store(&file).await?;
        let mut runtime = Runtime::new()
            .store(store.clone())
            .restores_tools::<McpServers>();
        let mcp = mcp_servers(&file)?;
        if let Some(ttl) = config.store.lease_ttl {
            if ttl.0.is_zero() {
                return Err(file.error("store.lease_ttl: a lease must last longer than zero"));
            }
            runtime = runtime.lease_ttl(ttl.0);
        }
        let limits = &config.limits;
        if let Some(t) = limits.hook_timeout {
            runtime = runtime.hook_timeout(t.0);
        }
        if let Some(t) = limits.tool_timeout {
            runtime = runtime.tool_timeout(t.0);
        }
        if let Some(t) = limits.model_turn_timeout {
            runtime = runtime.model_turn_timeout(t.0);
        }
        if let Some(t) = limits.model_idle_timeout {
            runtime = runtime.model_idle_timeout(t.0);
        }
        if let Some(n) = limits.max_depth {
            runtime = runtime.max_depth(n);
        }
        let positive = |name: &str, n: Option<usize>| match n {
            Some(0) => Err(file.error(format!(
                "limits.{name}: must be more than zero (leave it out for the default)"
            ))),
            other => Ok(other),
        };
        if let Some(n) = positive("max_tool_input_bytes", limits.max_tool_input_bytes)? {
            runtime = runtime.max_tool_input_bytes(n);
        }
        if let Some(n) = positive("max_tool_result_bytes", limits.max_tool_result_bytes)? {
            runtime = runtime.max_tool_result_bytes(n);
        }
        if let Some(n) = positive("max_tool_calls_per_turn", limits.max_tool_calls_per_turn)? {
            runtime = runtime.max_tool_calls_per_turn(n);
        }
        if let Some(r) = &config.hooks.redaction {
            runtime = runtime.redact(
                hooks::redactor(r).map_err(|e| file.error(format!("hooks.redaction: {e}")))?,
            );
        }
        let mut runtime_hooks = Vec::new();
        if let Some(t) = &config.telemetry {
            runtime = runtime.with(agentry::builtins::Telemetry::new());
            let endpoint = t
                .otlp_endpoint
                .as_deref()
                .unwrap_or("the OTLP endpoint of the environment");
            runtime_hooks.push((
                "telemetry".to_owned(),
                format!("GenAI spans of every run, exported to {endpoint}"),
            ));
        } else if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
            runtime = runtime.with(agentry::builtins::Telemetry::new());
            runtime_hooks.push((
                "telemetry".to_owned(),
                "GenAI spans of every run, exported to OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
            ));
        }
        let mut sessions = Vec::new();
        hooks::check_events(&config.hooks, "hooks", &file)?;
        for BuiltHook {
            name,
            summary,
            hook,
            sessions: ends,
        } in hooks::build(&config.hooks, "hooks").map_err(|e| file.error(e))?
        {
            runtime = runtime.with(hook);
            runtime_hooks.push((name, summary));
            sessions.extend(ends);
        }
        // Claude Code hooks: every run's, except runs of agents with hooks of their own, whose
        // one set holds every run's as well (so each handler fires once per event, and one
        // transcript is written).
        let every_run =
            hooks::ClaudeSet::of(&config.hooks, "hooks", &file).map_err(|e| file.error(e))?;
        if let Some(set) = &every_run {
            let own: Vec<String> = config
                .agents
                .iter()
                .filter(|(_, cfg)| hooks::has_claude_hooks(&cfg.hooks))
                .map(|(name, _)| name.clone())
                .collect();
            let BuiltHook {
                name,
                summary,
                hook,
                sessions: ends,
            } = set.clone().build(&file, hooks::RunsOf::EveryAgentBut(own));
            runtime = runtime.with(hook);
            runtime_hooks.push((name, summary));
            sessions.extend(ends);
        }

        let declared: BTreeMap<String, AgentConfig> = if config.agents.is_empty() {
            BTreeMap::from([(DEFAULT_AGENT.to_owned(), default_assistant())])
        } else {
            config.agents.clone()
        };
        let default_agent = match &config.default_agent {
            Some(name) if declared.contains_key(name.get_ref()) => name.get_ref().clone(),
            Some(name) => {
                return Err(file.error_at(
                    name.span(),
                    format!(
                        "no agent is named `{}`; the agents are: {}",
                        name.get_ref(),
                        names(&declared)
                    ),
                ));
            }
            None => file
                .first_agent()
                .unwrap_or_else(|| DEFAULT_AGENT.to_owned()),
        };
        let workspace = tools::workspace(&file)?;
        let mut agents = BTreeMap::new();
        let mut agent_hooks = BTreeMap::new();
        let mut building = Vec::new();
        for name in declared.keys() {
            build_agent(
                name,
                &declared,
                every_run.as_ref(),
                &file,
                models,
                &workspace,
                &mut agents,
                &mut agent_hooks,
                &mut sessions,
                &mut building,
            )
            .await?;
        }
        let prices = declared
            .iter()
            .filter_map(|(name, cfg)| {
                Some((
                    name.clone(),
                    cost::price_of(&model_spec(cfg), &config.prices)?,
                ))
            })
            .collect();
        let allowed = config.allowed_tools.clone();
        let mut project = Project {
            prices,
            sessions,
            file,
            store,
            store_label,
            runtime,
            agents,
            runtime_hooks,
            agent_hooks,
            default_agent,
            mcp,
            workspace: workspace.root().to_path_buf(),
        };
        if !allowed.is_empty() {
            project
                .allow_tools(&allowed, "allowed_tools")
                .map_err(|e| project.file.error(e))?;
        }
        Ok(project)
    }

    /// Run options with what every run of this project carries (its MCP servers).
    pub(crate) fn run_options(&self) -> RunOptions {
        match &self.mcp {
            Some(servers) => RunOptions::new().with_stored_tools(servers.clone()),
            None => RunOptions::new(),
        }
    }

    /// What `usage` cost on agent `agent`'s model, when its price is known.
    pub(crate) fn cost(&self, agent: &str, usage: &agentry::Usage) -> Option<Cost> {
        cost::of(self.prices.get(agent).copied(), usage)
    }

    /// Lets calls of `tools` (names or globs) run without asking, as if the tool policy allowed
    /// them (a `require_approval` rule or a hook that asks still asks); `label` names the hook.
    pub(crate) fn allow_tools(
        &mut self,
        tools: &[String],
        label: &'static str,
    ) -> Result<(), String> {
        use agentry::builtins::ToolPolicy;
        use agentry::hooks::HookExt;
        let mut policy = ToolPolicy::allow_by_default();
        for tool in tools {
            policy = policy.allow(tool.trim());
        }
        let policy = policy.build().map_err(|e| format!("{label}: {e}"))?;
        self.runtime = self.runtime.clone().with(policy.named(label));
        self.runtime_hooks.push((
            label.to_owned(),
            format!("{} run without asking", tools.join(", ")),
        ));
        Ok(())
    }

    /// Ends session `session` for the command hooks (SessionEnd with `reason`: `other` when the
    /// command that drove it exits, `clear`, `prompt_input_exit`), as Claude Code does when
    /// its process or conversation ends; a failure is a warning.
    pub(crate) async fn end_session(&self, session: &str, reason: &str) {
        for sessions in &self.sessions {
            if let Err(e) = sessions.end(session, reason).await {
                eprintln!("warning: SessionEnd hooks of session {session}: {e}");
            }
        }
    }

    /// Replaces session `old` by `new` (`/clear`): SessionEnd `clear` for the old one, and
    /// SessionStart `clear` when the new one's first run starts.
    pub(crate) async fn clear_session(&self, old: &str, new: &str) {
        for sessions in &self.sessions {
            if let Err(e) = sessions.clear(old, new).await {
                eprintln!("warning: SessionEnd hooks of session {old}: {e}");
            }
        }
    }

    /// True when agent `name` compacts its history (`[agents.NAME.compaction]`).
    pub(crate) fn compacts(&self, name: &str) -> bool {
        self.agents
            .get(name)
            .is_some_and(|agent| agent.def().compaction.is_some())
    }

    /// The model agent `name` runs on, as `provider:model`.
    pub(crate) fn model_spec(&self, name: &str) -> String {
        let declared = match self.file.config.agents.get(name) {
            Some(cfg) => cfg.clone(),
            None => default_assistant(),
        };
        model_spec(&declared)
    }

    /// The agent named `name`, or the default one.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&CliAgent, String> {
        let name = name.unwrap_or(&self.default_agent);
        self.agents.get(name).ok_or_else(|| {
            format!(
                "no agent is named `{name}` in {}; the agents are: {}",
                self.file.shown(),
                self.agents.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })
    }
}

fn names(agents: &BTreeMap<String, AgentConfig>) -> String {
    agents.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// The model an agent runs on: the one it names, else the one AGENTRY_MODEL names, else the
/// local default.
fn model_spec(cfg: &AgentConfig) -> String {
    let from_env = std::env::var(agentry_local::MODEL_ENV)
        .ok()
        .filter(|s| !s.trim().is_empty());
    cfg.model
        .as_ref()
        .map(|m| m.get_ref().clone())
        .or(from_env)
        .unwrap_or_else(|| "local".to_owned())
}

/// Builds agent `name` after its sub-agents (depth first; a cycle is an error).
#[allow(clippy::too_many_arguments)]
fn build_agent<'a>(
    name: &'a str,
    declared: &'a BTreeMap<String, AgentConfig>,
    every_run: Option<&'a hooks::ClaudeSet>,
    file: &'a LoadedConfig,
    models: &'a Models,
    workspace: &'a tools::Workspace,
    agents: &'a mut BTreeMap<String, CliAgent>,
    agent_hooks: &'a mut BTreeMap<String, Vec<(String, String)>>,
    sessions: &'a mut Vec<Sessions>,
    building: &'a mut Vec<String>,
) -> futures::future::BoxFuture<'a, Result<(), ConfigError>> {
    Box::pin(async move {
        if agents.contains_key(name) {
            return Ok(());
        }
        let cfg = &declared[name];
        building.push(name.to_owned());
        for sub in &cfg.sub_agents {
            let sub_name = sub.get_ref();
            if !declared.contains_key(sub_name) {
                return Err(file.error_at(
                    sub.span(),
                    format!(
                        "agent `{name}` names sub-agent `{sub_name}`, which is not declared; the agents are: {}",
                        names(declared)
                    ),
                ));
            }
            if building.iter().any(|b| b == sub_name) {
                return Err(file.error_at(
                    sub.span(),
                    format!(
                        "agents call each other in a cycle: {} -> {sub_name}; an agent cannot be its own sub-agent",
                        building.join(" -> ")
                    ),
                ));
            }
            build_agent(
                sub_name,
                declared,
                every_run,
                file,
                models,
                workspace,
                agents,
                agent_hooks,
                sessions,
                building,
            )
            .await?;
        }
        building.pop();

        let spec = &model_spec(cfg);
        let model = models.get(spec, file).await.map_err(|e| {
            let message = format!("agent `{name}`: model `{spec}`: {e}");
            let error = match &cfg.model {
                Some(m) => file.error_at(m.span(), message),
                None => file.error(message),
            };
            match e {
                crate::model::ModelError::Unavailable(_) => {
                    ConfigError::Unavailable(Box::new(error))
                }
                crate::model::ModelError::Config(_) => error,
            }
        })?;
        let mut b = Agent::builder(name.to_owned()).model_arc(model);
        if let Some(text) = &cfg.instructions {
            b = b.instructions(text.clone());
        }
        if let Some(text) = &cfg.description {
            b = b.description(text.clone());
        }
        for tool in tools::for_agent(name, cfg, file, workspace)? {
            b = b.tool_arc(tool);
        }
        for sub in &cfg.sub_agents {
            b = b.sub_agent(&agents[sub.get_ref()]);
        }
        if let Some(n) = cfg.max_steps {
            b = b.max_steps(n);
        }
        if let Some(t) = cfg.temperature {
            b = b.temperature(t);
        }
        if let Some(n) = cfg.max_tokens {
            b = b.max_tokens(n);
        }
        if let Some(c) = &cfg.compaction {
            let mut compaction = match c.strategy {
                CompactionStrategy::Summarize => Compaction::summarize(c.threshold),
                CompactionStrategy::Window => Compaction::window(c.threshold),
            };
            if let Some(n) = c.keep_recent {
                compaction = compaction.keep_recent(n);
            }
            if let Some(text) = &c.instructions {
                compaction = compaction.instructions(text.clone());
            }
            b = b.compaction(compaction);
        }
        if cfg.hooks.redaction.is_some() {
            return Err(file.error(format!(
                "agents.{name}.hooks.redaction: redaction applies to every run; declare it in [hooks.redaction]"
            )));
        }
        let mut shown = Vec::new();
        hooks::check_events(&cfg.hooks, &format!("agents.{name}.hooks"), file)?;
        for BuiltHook {
            name: hook_name,
            summary,
            hook,
            sessions: ends,
        } in
            hooks::build(&cfg.hooks, &format!("agents.{name}.hooks")).map_err(|e| file.error(e))?
        {
            b = b.with(hook);
            shown.push((hook_name, summary));
            sessions.extend(ends);
        }
        let scope = format!("agents.{name}.hooks");
        if let Some(own) =
            hooks::ClaudeSet::of(&cfg.hooks, &scope, file).map_err(|e| file.error(e))?
        {
            let set = match every_run {
                Some(every) => every.clone().and(own),
                None => own,
            };
            let built = set.build(file, hooks::RunsOf::Agent(name.to_owned()));
            b = b.with(built.hook);
            shown.push((built.name, built.summary));
            sessions.extend(built.sessions);
        }
        agent_hooks.insert(name.to_owned(), shown);
        let agent = b
            .output_schema(cfg.output_schema.clone())
            .build()
            .map_err(|e| file.error(format!("agent `{name}`: {e}")))?;
        agents.insert(name.to_owned(), agent);
        Ok(())
    })
}

/// The MCP servers of `mcp_config_files` and `[mcp_servers]` (the table wins over a file for a
/// server named in both); `None` when there are none.
fn mcp_servers(file: &LoadedConfig) -> Result<Option<McpServers>, ConfigError> {
    let mut config = McpConfig::default();
    for path in &file.config.mcp_config_files {
        let loaded = McpConfig::load(file.resolve(path))
            .map_err(|e| file.error(format!("mcp_config_files: {e}")))?;
        config.mcp_servers.extend(loaded.mcp_servers);
    }
    for (name, spec) in &file.config.mcp_servers {
        config = config.server(name.clone(), spec.clone());
    }
    if config.mcp_servers.is_empty() {
        return Ok(None);
    }
    McpServers::new(config)
        .map(Some)
        .map_err(|e| file.error(format!("mcp_servers: {e}")))
}

/// Opens the store `[store] url` names; by default a SQLite file `.agentry/runs.db` beside the
/// config file.
async fn open_store(file: &LoadedConfig) -> Result<(Arc<dyn RunStore>, String), ConfigError> {
    let url = file.config.store.url.as_ref();
    let text = match url {
        Some(u) => expand_env(u.get_ref()).map_err(|e| file.error_at(u.span(), e))?,
        // A project's runs are kept beside its config; without one, in the user's store.
        None if file.path.is_some() => "sqlite:.agentry/runs.db".to_owned(),
        None => format!(
            "sqlite:{}",
            crate::config::agentry_home().join("runs.db").display()
        ),
    };
    let at = |message: String| match url {
        Some(u) => file.error_at(u.span(), message),
        None => file.error(message),
    };
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        let store = PostgresStore::connect(&text).await.map_err(|e| {
            ConfigError::Unavailable(Box::new(at(format!("cannot open the Postgres store: {e}"))))
        })?;
        return Ok((Arc::new(store), "postgres".to_owned()));
    }
    let Some(path) = text.strip_prefix("sqlite:") else {
        return Err(at(format!(
            "`{text}` is not a store URL; write `sqlite:<file>` or `postgres://user@host/db`"
        )));
    };
    let path: PathBuf = file.resolve(path.trim_start_matches("//"));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            ConfigError::Unavailable(Box::new(at(format!(
                "cannot create the store's directory {}: {e}",
                dir.display()
            ))))
        })?;
    }
    let store = SqliteStore::open(&path).await.map_err(|e| {
        ConfigError::Unavailable(Box::new(at(format!(
            "cannot open the SQLite store {}: {e}",
            path.display()
        ))))
    })?;
    Ok((Arc::new(store), format!("sqlite:{}", path.display())))
}

/// Replaces `${VAR}` (and `${VAR:-default}`) with the environment variable's value; unset
/// variables without a default are an error naming them.
pub(crate) fn expand_env(text: &str) -> Result<String, String> {
    env_template::expand(text, Syntax::BRACED, env_template::from_env).map_err(|e| e.to_string())
}
