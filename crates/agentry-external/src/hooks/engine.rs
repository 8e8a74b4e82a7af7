//! What registered command hooks share: their settings and failure policy, and the state of each
//! part (commands, webhooks, the Claude Code mapping).

use crate::claude::{ClaudeState, EventName, HookSettings, default_state_dir};
use crate::command::{Commands, OutputLimits};
use crate::webhook::WebhookClient;
use agentry_core::hooks::HookCtx;
use std::path::PathBuf;

/// The engine behind [`CommandHooks`](crate::CommandHooks): shared by the agentry hook it is
/// registered as and by its [`Sessions`](crate::Sessions).
pub(crate) struct Engine {
    /// Names the hooks in errors and events.
    pub(crate) name: String,
    /// The handlers, by event and matcher.
    pub(crate) settings: HookSettings,
    /// The project root: the commands' working directory and the payload's `cwd`.
    pub(crate) project_dir: PathBuf,
    /// Any handler's failure fails the event.
    pub(crate) fail_closed: bool,
    /// Payloads go out as the run has them, its redactor not applied (see
    /// `CommandHooks::see_secrets`).
    pub(crate) see_secrets: bool,
    /// A field an event does not allow fails the event.
    pub(crate) strict: bool,
    /// The most a handler may answer: a command's output, a persistent process's line, a
    /// webhook's body.
    pub(crate) limits: OutputLimits,
    /// What command handlers share.
    pub(crate) commands: Commands,
    /// The HTTP client webhooks share.
    pub(crate) webhooks: WebhookClient,
    /// What presenting agentry's events as Claude Code's keeps.
    pub(crate) claude: ClaudeState,
    /// The runs the hooks act on, by their agent.
    pub(crate) agents: AgentScope,
    /// Media parts go to handlers as base64 `data` instead of by reference.
    pub(crate) inline_media: bool,
}

/// The runs [`CommandHooks`](crate::CommandHooks) act on, by the name of the run's agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum AgentScope {
    /// Every run.
    #[default]
    All,
    /// Only runs of this agent (not the sub-agent runs it starts).
    Only(String),
    /// Every run except those of these agents.
    Except(Vec<String>),
}

impl AgentScope {
    /// True when runs of agent `agent` are in the scope.
    pub(crate) fn includes(&self, agent: &str) -> bool {
        match self {
            AgentScope::All => true,
            AgentScope::Only(only) => agent == only,
            AgentScope::Except(agents) => !agents.iter().any(|a| a == agent),
        }
    }
}

impl Engine {
    /// An engine for `settings` in the project `project_dir`, with the defaults: state in the
    /// project's default state directory, Claude Code's tool names, failures that fail open.
    pub(crate) fn new(settings: HookSettings, project_dir: PathBuf) -> Self {
        Engine {
            name: "command hooks".into(),
            settings,
            claude: ClaudeState::new(default_state_dir(&project_dir)),
            project_dir,
            fail_closed: false,
            see_secrets: false,
            strict: false,
            limits: OutputLimits {
                stdout: 1 << 20,
                stderr: 64 << 10,
            },
            commands: Commands::default(),
            webhooks: WebhookClient::default(),
            agents: AgentScope::All,
            inline_media: false,
        }
    }

    /// True when the hooks act on the run of `ctx` (its agent is in their scope).
    pub(crate) fn applies_to(&self, ctx: &HookCtx) -> bool {
        self.agents.includes(ctx.agent_name())
    }

    /// True when some handler is registered for `event`.
    pub(crate) fn has(&self, event: EventName) -> bool {
        self.settings.groups.iter().any(|g| g.event == event)
    }
}
