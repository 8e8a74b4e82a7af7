//! The command line.

use agentry_local::CachePrecision;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Run agents from a config file: live in the terminal, checkpointed, with hooks, approvals
/// and run management.
#[derive(Parser)]
#[command(name = "agentry", version, about, long_about = None, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The config file (default: agentry.toml in this directory or the nearest parent; without
    /// one, an assistant on the local model with read-only tools). The user's config,
    /// `~/.agentry/config.toml` (`$AGENTRY_HOME/config.toml`), lies under it.
    #[arg(long = "config", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Set a key of the config for this command, over the files: `-c agents.helper.max_steps=20`,
    /// `-c 'hooks.tool_policy.allow=["Bash"]'` (a TOML value; other text is a string).
    /// Repeatable. `-c FILE` (no `=`) names the config file, as `--config` does.
    #[arg(short = 'c', global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Say more: a crash's backtrace, and agentry's debug log on stderr (as `RUST_LOG=debug`).
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Print JSON instead of text (NDJSON events for commands that run an agent).
    #[arg(long, global = true)]
    pub json: bool,
    /// When to use colour: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// A Claude Code plugin directory whose hooks (`hooks/hooks.json`) every run gets, as
    /// `[hooks] plugins` in agentry.toml does (repeatable).
    #[arg(long, global = true, value_name = "DIR")]
    pub plugin_dir: Vec<std::path::PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, shown in `--help`.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0    the run ended with a final answer (or the command succeeded)
  1    the run failed, or the command could not do what it was asked (a model that
       cannot be downloaded or loaded, a store that cannot be reached)
  2    bad usage or a bad config file
  3    the run waits for approval (agentry approve / agentry reject)
  4    the run stopped before a final answer (a guard, the step limit, a hook or a person),
       or the model's final answer was empty
  5    another process drives the run (its lease is held)
  130  the run was cancelled (agentry resume continues it)";

/// When to colour output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The commands.
#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run an agent on a prompt, live.
    Run(RunArgs),
    /// A conversation: each line you type is a turn of one session.
    Chat(ChatArgs),
    /// List runs.
    Runs(RunsArgs),
    /// Show a run: its messages, or with --events its recorded events.
    Show {
        /// The run id.
        run: String,
        /// Show the recorded events instead of the messages.
        #[arg(long)]
        events: bool,
    },
    /// Approve a paused run's call (every pending call when none is named), and continue it.
    Approve {
        /// The run id.
        run: String,
        /// The call id (default: every pending call).
        call: Option<String>,
        /// The run is on the Temporal server of the config's `[temporal]`.
        #[arg(long)]
        temporal: bool,
    },
    /// Reject a paused run's call (every pending call when none is named), and continue it.
    Reject {
        /// The run id.
        run: String,
        /// The call id (default: every pending call).
        call: Option<String>,
        /// What the model is told.
        #[arg(long, default_value = "rejected by a person")]
        reason: String,
        /// Stop the run instead of telling the model.
        #[arg(long)]
        stop: bool,
        /// The run is on the Temporal server of the config's `[temporal]`.
        #[arg(long)]
        temporal: bool,
    },
    /// Continue a run that was interrupted or cancelled, from its last checkpoint.
    Resume {
        /// The run id.
        run: String,
    },
    /// Run a stored run again with today's hooks: its recorded model turns played back and its
    /// recorded tool results given back (no model called, no tool run), and show where the
    /// decisions differ. Exits 0 when the replay matches the recording, 1 when it differs.
    Replay {
        /// The run id.
        run: String,
        /// The agent whose hooks run (default: the run's own agent).
        #[arg(short, long)]
        agent: Option<String>,
    },
    /// Cancel a run that is not being driven (paused or interrupted): it ends as cancelled.
    Cancel {
        /// The run id.
        run: String,
    },
    /// MCP: serve the configured agents to MCP clients.
    Mcp {
        /// What to do.
        #[command(subcommand)]
        command: McpCommand,
    },
    /// The configured hooks.
    Hooks {
        /// What to do.
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// The local models.
    Models {
        /// What to do.
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// The config file.
    Config {
        /// What to do.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Serve the config's agents over HTTP until Ctrl-C: the run API (runs, their events as
    /// Server-Sent Events, approvals, sessions; /openapi.json describes it), on the config's
    /// store and hooks.
    Serve(ServeArgs),
    /// Host the config's agents on the Temporal server of its `[temporal]` table, until
    /// Ctrl-C (an `agentry` built with the `temporal` feature).
    Worker,
    /// Write a commented starter agentry.toml here.
    Init {
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// `agentry run`.
#[derive(Args)]
pub(crate) struct RunArgs {
    /// The agent (default: the config's default agent).
    #[arg(short, long)]
    pub agent: Option<String>,
    #[command(flatten)]
    pub overrides: AgentOverrides,
    /// A session id: the run starts where the session's last run left off.
    #[arg(short, long, conflicts_with = "continue_session")]
    pub session: Option<String>,
    /// Continue the latest session (of this agent, in this store): the run starts where its
    /// last run left off.
    #[arg(long = "continue", visible_alias = "cont")]
    pub continue_session: bool,
    /// Never prompt for approval: a run that needs one stops (exit 3) for `agentry approve`.
    #[arg(long)]
    pub no_prompt: bool,
    #[command(flatten)]
    pub approvals: ApprovalArgs,
    /// Run on the Temporal server of the config's `[temporal]` table (workers started with
    /// `agentry worker` run it) and follow it here.
    #[arg(long)]
    pub temporal: bool,
    /// Attach a file to the prompt: an image, a PDF or another document, audio (repeatable;
    /// `--file photo.png "What is in this picture?"`). Its type is read from its bytes.
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub files: Vec<std::path::PathBuf>,
    /// The prompt (words are joined with spaces; `-` reads it from stdin).
    #[arg(required = true, num_args = 1..)]
    pub prompt: Vec<String>,
}

/// What a command changes of its agent, for this run only.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct AgentOverrides {
    /// The model, instead of the agent's (`local`, `openai:gpt-4.1-mini`,
    /// `anthropic:claude-sonnet-4-5`, `scripted:turns.json`, ...).
    #[arg(short, long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// The step limit, instead of the agent's.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
}

/// What runs without asking a person, for scripts.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct ApprovalArgs {
    /// Calls of these tools run without asking (comma-separated names or globs: `Bash,Write`),
    /// as if the tool policy allowed them; a `require_approval` rule or a hook that asks still
    /// asks.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub allowed_tools: Vec<String>,
    /// Approve every call that asks for approval, without asking (recorded as approved by
    /// `--yes`). For scripts and sandboxes; blocks and denials still apply.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `agentry chat`.
#[derive(Args)]
pub(crate) struct ChatArgs {
    /// The agent (default: the config's default agent).
    #[arg(short, long)]
    pub agent: Option<String>,
    #[command(flatten)]
    pub overrides: AgentOverrides,
    #[command(flatten)]
    pub approvals: ApprovalArgs,
    /// The session id (default: a new one).
    #[arg(short, long, conflicts_with_all = ["continue_session", "pick"])]
    pub session: Option<String>,
    /// Continue the latest session (of this agent, in this store).
    #[arg(long = "continue", visible_alias = "cont", conflicts_with = "pick")]
    pub continue_session: bool,
    /// Choose the session to continue from a list of the recent ones.
    #[arg(long = "resume", visible_alias = "pick")]
    pub pick: bool,
}

/// `agentry runs`.
#[derive(Args)]
pub(crate) struct RunsArgs {
    /// Only runs with this status: running, awaiting_approval, finished, failed, cancelled.
    #[arg(long)]
    pub status: Option<String>,
    /// Only this agent's runs.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only this session's runs.
    #[arg(long)]
    pub session: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
}

/// `agentry mcp ...`.
#[derive(Subcommand)]
pub(crate) enum McpCommand {
    /// Serve agents as MCP tools over stdio (each a tool whose input is the prompt), for Claude
    /// Code, Claude Desktop or any MCP client.
    Serve {
        /// The agents to serve (default: every agent of the config).
        #[arg(short, long = "agent")]
        agents: Vec<String>,
    },
}

/// `agentry hooks ...`.
#[derive(Subcommand)]
pub(crate) enum HooksCommand {
    /// List the hooks each agent runs with.
    List,
    /// Run an agent's hooks (the runtime's and its own) on a sample event, and print what each
    /// hook decided and how long it took. Nothing else runs: no model, no tool.
    #[command(after_help = HOOKS_TEST_HELP)]
    Test {
        /// The event, by its Claude Code name or agentry's: PreToolUse (BeforeTool),
        /// PostToolUse (AfterTool), PostToolUseFailure (ToolFailed), UserPromptSubmit and
        /// SessionStart (RunStart), Stop, SubagentStop, SubagentStart (BeforeSubAgent),
        /// PostToolBatch (AfterToolBatch), PreCompact (BeforeCompact), PostCompact
        /// (AfterCompact), PermissionRequest and Notification (ApprovalRequested), SessionEnd.
        event: String,
        /// The sample event as a JSON object, in the form a hook script reads on stdin
        /// (`-` reads it from stdin).
        #[arg(short, long, value_name = "FILE.json")]
        input: Option<PathBuf>,
        /// The agent whose hooks run (default: the config's default agent).
        #[arg(short, long)]
        agent: Option<String>,
    },
}

/// The sample fields `hooks test` reads, shown in its `--help`.
pub(crate) const HOOKS_TEST_HELP: &str = "\
The sample's fields, as hook scripts read them:
  tool_name, tool_input, tool_use_id   tool events, PermissionRequest, Notification
  tool_response                        PostToolUse
  error                                PostToolUseFailure
  prompt                               UserPromptSubmit, SessionStart, SubagentStart
  last_assistant_message               Stop, SubagentStop
  agent_type                           SubagentStart
  tool_calls                           PostToolBatch
  compact_summary                      PostCompact
  reason                               SessionEnd (default other)
  session_id                           every event
  transcript_path, stop_hook_active,   given as they are to every hook script (a Stop hook
  source, trigger, cwd, permission_mode  sees the sample's stop_hook_active, a SessionStart
                                       hook's matcher is tested against its source)
Example:
  echo '{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf /\"}}' \\
    | agentry hooks test PreToolUse --input -";

/// `agentry models ...`.
#[derive(Subcommand)]
pub(crate) enum ModelsCommand {
    /// The catalog of local models, and what the cache holds.
    List,
    /// Download a catalog model into the cache and check its pinned sha256.
    Fetch {
        /// The catalog id (default: the default model).
        model: Option<String>,
    },
    /// Measure a local model: load time, prompt and decode tokens per second, peak memory.
    Bench(BenchArgs),
}

/// `agentry models bench`.
#[derive(Args)]
pub(crate) struct BenchArgs {
    /// The catalog id, or the path of a .gguf file (default: the default model).
    pub model: Option<String>,
    /// Tokens of prompt to process before generating (at least the chat template's own).
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub prompt_tokens: usize,
    /// Tokens to generate.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub tokens: u32,
    /// Threads to compute on (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How the key/value cache stores keys and values: f32 (exact) or f16 (half the memory and
    /// reading).
    #[arg(long = "cache", value_name = "f32|f16", default_value_t = CachePrecision::F32)]
    pub precision: CachePrecision,
}

/// `agentry config ...`.
#[derive(Subcommand)]
pub(crate) enum ConfigCommand {
    /// Check the config: parse it, build every agent, tool and hook, open the store.
    Check,
    /// Print the JSON Schema of agentry.toml.
    Schema,
}

/// `agentry serve`.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct ServeArgs {
    /// The address to listen on (default: the config's server.addr, else 127.0.0.1:7777).
    /// Beyond this machine the server needs a token (AGENTRY_SERVER_TOKEN or server.token).
    #[arg(long)]
    pub addr: Option<String>,
}
