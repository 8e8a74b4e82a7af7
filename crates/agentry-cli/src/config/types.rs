//! The shape of `agentry.toml`.

use super::HumanDuration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use toml::Spanned;

/// A whole `agentry.toml`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "agentry.toml",
    description = "Agents, hooks, tools, MCP servers and the store of an agentry project."
)]
pub struct Config {
    /// The agent `agentry run` runs when `--agent` is not given (default: the only agent, or
    /// the first one in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub default_agent: Option<Spanned<String>>,
    /// The agents, by name.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Tools whose calls run without asking a person (names or globs: `["Bash", "mcp__git__*"]`),
    /// as `--allowed-tools` does; a `require_approval` rule or a hook that asks still asks.
    /// Answering `always` at an approval prompt adds the tool here, in the project's
    /// `.agentry/local.toml`. The lists of every layer (user, project, local) add up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// Options of the built-in tools, by tool name (`[tools.Bash] timeout_ms = 30000`); they
    /// apply wherever an agent lists the tool.
    #[serde(default)]
    pub tools: ToolsConfig,
    /// The directory file tools are confined to and commands run in.
    #[serde(default)]
    pub workspace: WorkspaceConfig,
    /// Hooks on every run of every agent.
    #[serde(default)]
    pub hooks: HooksConfig,
    /// Where runs are checkpointed.
    #[serde(default)]
    pub store: StoreConfig,
    /// Run limits that apply to every run.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// MCP servers whose tools every agent may call, named `mcp__<server>__<tool>`: entries as
    /// in `.mcp.json` (`command`, `args`, `env`; or `type = "http"`, `url`, `headers`), with
    /// agentry's optional fields (`timeoutMs`, `allowedTools`, `deniedTools`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, agentry_mcp::ServerSpec>,
    /// `.mcp.json` files (Claude Code's and Claude Desktop's format) whose servers are added to
    /// `mcp_servers`, relative to the config file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_config_files: Vec<String>,
    /// Prices of hosted models, by model spec as agents name them
    /// (`[prices."anthropic:claude-sonnet-4-5"] input = 3.0, output = 15.0`), so the run
    /// summary shows what a run cost. Local and scripted models cost nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, PriceConfig>,
    /// Traces of every run (OpenTelemetry GenAI spans: the run, each step, model call and tool
    /// call, sub-agents) exported to an OTLP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetryConfig>,
    /// A Temporal server runs go to with `agentry run --temporal`, and `agentry worker`
    /// hosts this file's agents for (an `agentry` built with the `temporal` feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<TemporalConfig>,
    /// `agentry serve`: the HTTP server of this file's agents.
    #[serde(default)]
    pub server: ServerConfig,
}

/// How `agentry serve` serves the agents over HTTP.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The address to listen on (default `127.0.0.1:7777`; `--addr` overrides it). Any
    /// address beyond this machine needs a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// The bearer token every request must carry (`${VAR}` is expanded; the environment's
    /// `AGENTRY_SERVER_TOKEN` wins). Keep it out of the file: `token = "${MY_TOKEN}"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Web origins whose pages may call the server from a browser (CORS), e.g.
    /// `["https://app.example"]`. None by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cors_origins: Vec<String>,
    /// The largest request body, in bytes (default 2 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body: Option<usize>,
    /// The most bytes of request headers (default 32 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_header_bytes: Option<usize>,
}

/// Where runs on Temporal go.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemporalConfig {
    /// The server's frontend (`http://127.0.0.1:7233`); `${VAR}` is expanded.
    pub address: String,
    /// The namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The task queue workers poll and runs are started on (default `agentry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_queue: Option<String>,
    /// Where runs' activities run: `scheduled` (default: on any worker, heartbeated),
    /// `local_hooks` (hooks-only phases on the workflow's worker) or `local` (every phase on
    /// the workflow's worker: fastest, phases since the last workflow task run again if the
    /// worker dies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementConfig>,
}

/// Where a run's activities run on Temporal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlacementConfig {
    /// Scheduled by the server on any worker.
    #[default]
    Scheduled,
    /// Hooks-only phases as local activities.
    LocalHooks,
    /// Every phase as a local activity.
    Local,
}

/// Where run traces go.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP endpoint (`http://127.0.0.1:4318`: spans are posted to its `/v1/traces`
    /// as protobuf); default `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`.
    /// `${VAR}` is replaced by the environment variable's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// Headers sent with each export (`{ Authorization = "Bearer ${OTLP_TOKEN}" }`); `${VAR}`
    /// is expanded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The `service.name` of the spans (default `agentry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
}

/// A hosted model's price, in US dollars per million tokens.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    /// Prompt tokens.
    pub input: f64,
    /// Completion tokens (reasoning included).
    pub output: f64,
    /// Prompt tokens read from the provider's cache (default: `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Prompt tokens written to the provider's cache (default: `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input: Option<f64>,
}

/// Options of each built-in tool.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// `Bash`: runs a shell command in the workspace.
    #[serde(rename = "Bash", default, skip_serializing_if = "Option::is_none")]
    pub bash: Option<agentry_tools::BashOptions>,
    /// `Read`: reads a file of the workspace.
    #[serde(rename = "Read", default, skip_serializing_if = "Option::is_none")]
    pub read: Option<agentry_tools::ReadOptions>,
    /// `Write`: writes a file of the workspace.
    #[serde(rename = "Write", default, skip_serializing_if = "Option::is_none")]
    pub write: Option<agentry_tools::WriteOptions>,
    /// `Edit`: replaces text in a file of the workspace.
    #[serde(rename = "Edit", default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<agentry_tools::EditOptions>,
    /// `Glob`: finds files by pattern.
    #[serde(rename = "Glob", default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<agentry_tools::GlobOptions>,
    /// `Grep`: searches file contents.
    #[serde(rename = "Grep", default, skip_serializing_if = "Option::is_none")]
    pub grep: Option<agentry_tools::GrepOptions>,
    /// `WebFetch`: fetches a URL.
    #[serde(rename = "WebFetch", default, skip_serializing_if = "Option::is_none")]
    pub web_fetch: Option<agentry_tools::WebFetchOptions>,
}

impl ToolsConfig {
    /// The options given for `tool`, as JSON (`null` when none).
    pub fn options(&self, tool: &str) -> Value {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        value.get(tool).cloned().unwrap_or(Value::Null)
    }
}

/// One agent.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The model, as `provider:model`: `local` (the embedded default), `local:<catalog id>`,
    /// `local:<file.gguf>`, `openai:gpt-4.1-mini`, `anthropic:claude-sonnet-4-5`,
    /// `openai-responses:o4-mini`, or `scripted:<turns.json>` (model turns played back, for
    /// trying hooks offline). Default: `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub model: Option<Spanned<String>>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// What the agent does (shown to a parent agent that calls it as a sub-agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The built-in tools it may call, by name (`Read`, `Grep`, `Bash`, ...). Default: the
    /// read-only ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub tools: Option<Vec<Spanned<String>>>,
    /// Other agents of this file it may call as tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub sub_agents: Vec<Spanned<String>>,
    /// A JSON Schema the final answer must match (as an inline table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The step limit (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens one model turn may generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// When and how long histories are compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionConfig>,
    /// Hooks on this agent's runs only.
    #[serde(default)]
    pub hooks: HooksConfig,
}

/// History compaction.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// `summarize` (a model call summarises older messages) or `window` (they are dropped).
    pub strategy: CompactionStrategy,
    /// Compact once the prompt passes this many tokens.
    pub threshold: usize,
    /// The latest messages kept verbatim (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent: Option<usize>,
    /// The summarising call's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// How older messages are folded.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CompactionStrategy {
    /// A model call summarises them.
    Summarize,
    /// They are dropped.
    Window,
}

/// The workspace.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// The root directory, relative to the config file (default: the config file's directory,
    /// or the current directory when there is no file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// Hooks: built-in ones by name with their options, and external ones (commands, persistent
/// processes, webhooks) in Claude Code's settings format.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Step, token, time and cost limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<GuardsConfig>,
    /// Which tools may run, which are refused, which need approval, and argument rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_policy: Option<ToolPolicyConfig>,
    /// Secrets masked in what is stored, logged and sent to hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<RedactionConfig>,
    /// Checks a final answer must pass before the run may end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_gate: Option<FinishGateConfig>,
    /// Claude Code settings files whose `hooks` block is loaded as it is
    /// (`.claude/settings.json`, `.claude/settings.local.json`), relative to the config file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings_files: Vec<String>,
    /// Claude Code plugin directories whose `hooks/hooks.json` is loaded as an installed
    /// plugin's: its commands get `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA`. Relative to the
    /// config file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
    /// A `hooks` block in Claude Code's settings format, written in TOML:
    /// `[[hooks.events.PreToolUse]] matcher = "Bash"` with
    /// `hooks = [{ type = "command", command = "./guard.sh", timeout = 5 }]`. Handler types:
    /// `command`, `persistent` (a long-lived process), `http` (a signed webhook).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, Vec<Value>>")]
    pub events: BTreeMap<String, Vec<Spanned<Value>>>,
    /// A command, process or webhook that fails (non-zero exit, bad output, timeout) fails the
    /// run instead of being reported and skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_closed: bool,
    /// Commands, processes and webhooks get their payloads as the run has them, secrets
    /// included (by default they get them masked by `[hooks.redaction]`, as the run's reports
    /// are).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub see_secrets: bool,
}

/// The guards hook.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardsConfig {
    /// Stop after this many steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Stop once the run has used this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Stop once the run has taken this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_time: Option<HumanDuration>,
    /// Block a tool call once the run has made this many identical ones (the same tool and
    /// input); the model is told to try another approach. Default 5; 0 turns it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeated_calls: Option<u32>,
}

/// The tool policy hook.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicyConfig {
    /// What a tool no pattern names gets: `allow` (the default) or `deny`.
    #[serde(default)]
    pub default: PolicyDefault,
    /// Tool name patterns (globs) allowed to run, without approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Tool name patterns refused (the model is told why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// Tool name patterns that pause for a person's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_approval: Vec<String>,
    /// Rules on arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ArgRuleConfig>,
}

/// A tool policy's default.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PolicyDefault {
    /// Tools no pattern names run.
    #[default]
    Allow,
    /// Tools no pattern names are refused.
    Deny,
}

/// A rule on one argument of some tools.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgRuleConfig {
    /// Tool name pattern (glob).
    pub tools: String,
    /// JSON Pointer to the argument (`/command`).
    pub pointer: String,
    /// A regex the argument must not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_not_match: Option<String>,
    /// A regex the argument must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_match: Option<String>,
}

/// The redaction hook.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// Regexes whose matches are masked (besides the built-in key and token patterns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Environment variables whose values are masked wherever they appear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets_from_env: Vec<String>,
    /// The text that replaces a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<String>,
    /// Mask tool inputs too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_inputs: Option<bool>,
    /// Mask tool results too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_results: Option<bool>,
    /// Leave out the built-in patterns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_defaults: bool,
}

/// The finish gate hook: a final answer that fails a check is sent back to the model.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishGateConfig {
    /// A regex the final answer must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_match: Option<String>,
    /// A regex the final answer must not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_not_match: Option<String>,
    /// How many answers it sends back before letting one through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rejections: Option<u32>,
}

/// The store.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite:<file>` (default `sqlite:.agentry/runs.db`, relative to the config file) or a
    /// `postgres://` URL. `${VAR}` is replaced by the environment variable's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
    /// How long a run's lease lasts unless renewed (default 30s): after a process driving a
    /// run dies, `agentry resume` can take the run over once this much time has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ttl: Option<HumanDuration>,
}

/// Run limits.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// The longest one hook may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_timeout: Option<HumanDuration>,
    /// The longest one tool call may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout: Option<HumanDuration>,
    /// The longest one model turn may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_turn_timeout: Option<HumanDuration>,
    /// The longest a model stream may stay silent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_idle_timeout: Option<HumanDuration>,
    /// How deep sub-agents may nest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// The most bytes of arguments one tool call may have (default 1 MiB); a call over it is
    /// not run and the model is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_input_bytes: Option<usize>,
    /// The most bytes of text one tool result keeps (default 1 MiB); the rest is cut, and the
    /// model is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_result_bytes: Option<usize>,
    /// The most tool calls of one model turn that run (default 64); the rest are answered with
    /// an error result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls_per_turn: Option<usize>,
}
