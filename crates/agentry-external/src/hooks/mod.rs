//! The hook command hooks register as: [`CommandHooks`] and its options, the engine its parts
//! share, the agentry hook it becomes, what it stores with a run, and settings files watched for
//! changes.

mod engine;
mod hook;
mod register;
mod stored;
mod watch;

pub(crate) use engine::{AgentScope, Engine};
pub use watch::SettingsWatch;

use crate::claude::{EventName, HookSettings, ToolNames, default_state_dir};
use crate::command::OutputLimits;
use crate::error::SettingsError;
use crate::handler::HandlerSpec;
use std::path::{Path, PathBuf};

/// Command hooks in Claude Code's protocol, registered on a runtime, an agent or a run like any
/// hook.
///
/// Each event runs the commands whose matcher applies, all at once (an identical command once),
/// with the event as one line of JSON on stdin; their answers merge most restrictive first
/// (deny > defer > ask > allow; the last `updatedInput` to finish wins) into one decision, as one
/// step of agentry's priority pipeline. Scripts written for Claude Code run unchanged: the
/// working directory is the project root, `CLAUDE_PROJECT_DIR` and the other variables are set,
/// tools are presented under Claude's names ([`ToolNames`]), and `transcript_path` is a JSONL
/// transcript in Claude Code's line format.
///
/// A command that fails (a status other than 0 and 2, a signal, its timeout, stdout that is not
/// the protocol) fails open by default, as in Claude Code: the run goes on, and the failure is
/// reported as HookFailed naming the command and the event. [`fail_closed`](Self::fail_closed)
/// fails the run instead.
///
/// ```no_run
/// use agentry_core::hooks::Hooks;
/// use agentry_external::CommandHooks;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut hooks = Hooks::new();
/// hooks.add(CommandHooks::load(".claude/settings.json")?);
/// # Ok(()) }
/// ```
pub struct CommandHooks {
    engine: Engine,
}

impl CommandHooks {
    /// Command hooks from settings; the project directory is the current directory.
    pub fn new(settings: HookSettings) -> Self {
        let project_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        CommandHooks {
            engine: Engine::new(settings, project_dir),
        }
    }

    /// Command hooks from a settings file (`.claude/settings.json`, a plugin's
    /// `hooks/hooks.json`, ...). For a file in a `.claude` directory, the project directory is
    /// that directory's parent; otherwise the current directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SettingsError> {
        let path = path.as_ref();
        let settings = HookSettings::load(path)?;
        let mut hooks = CommandHooks::new(settings);
        hooks.engine.name = format!("command hooks of {}", path.display());
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(dir) = absolute.parent()
            && dir.file_name().is_some_and(|n| n == ".claude")
            && let Some(project) = dir.parent()
        {
            hooks = hooks.project_dir(project);
        }
        Ok(hooks)
    }

    /// The project root: the commands' working directory and `CLAUDE_PROJECT_DIR`.
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        if self.engine.claude.state_dir == default_state_dir(&self.engine.project_dir) {
            self.engine.claude.state_dir = default_state_dir(&dir);
        }
        self.engine.project_dir = dir;
        self
    }

    /// Runs the hooks as a plugin's: `CLAUDE_PLUGIN_ROOT` (and `CLAUDE_PLUGIN_DATA` when given)
    /// are set and substituted into exec-form commands.
    pub fn plugin(mut self, root: impl Into<PathBuf>, data: Option<PathBuf>) -> Self {
        self.engine.commands.plugin_root = Some(root.into());
        self.engine.commands.plugin_data = data;
        self
    }

    /// Where transcripts (`<session>.jsonl`) and session environment files go (default:
    /// `$AGENTRY_HOME/projects/<project>/`, with `AGENTRY_HOME` defaulting to `~/.agentry`).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.engine.claude.state_dir = dir.into();
        self
    }

    /// Sends media parts (images, documents, audio) to handlers inline, as base64 `data`. By
    /// default a handler gets each by reference: `sha256`, `size`, and the `path` of a file in
    /// the state directory's `media/` that holds the bytes, written once per content.
    pub fn inline_media(mut self) -> Self {
        self.engine.inline_media = true;
        self
    }

    /// The names tools are presented under (default: [`ToolNames::claude_code`]).
    pub fn tool_names(mut self, names: ToolNames) -> Self {
        self.engine.claude.tool_names = names;
        self
    }

    /// Acts only on runs of agent `agent` (not on the sub-agent runs it starts, nor on other
    /// agents' runs): for hooks declared for one agent, beside hooks every run has.
    pub fn only_for_agent(mut self, agent: impl Into<String>) -> Self {
        self.engine.agents = AgentScope::Only(agent.into());
        self
    }

    /// Acts on every run except those of `agents` (which have a set of hooks of their own that
    /// includes these).
    pub fn except_agents(mut self, agents: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.engine.agents = AgentScope::Except(agents.into_iter().map(Into::into).collect());
        self
    }

    /// A command that fails, times out or breaks the protocol fails the run (with an error naming
    /// it and the event), instead of being reported and passed over.
    pub fn fail_closed(mut self) -> Self {
        self.engine.fail_closed = true;
        self
    }

    /// Hands every command, process and webhook its payload as the run has it, secrets
    /// included. By default a payload goes out masked by the run's redactor
    /// (`Runtime::redact`), as the run's reports are, since scripts log and forward what they
    /// read; a hook that must judge the real values (a script that looks a token up) is
    /// configured to see them with this. Without a redactor nothing is masked either way.
    ///
    /// A masked payload's `updatedInput` answer keeps the real value of every field the hook
    /// handed back as it was given (masked); a field the hook changed is taken as it wrote it.
    pub fn see_secrets(mut self) -> Self {
        self.engine.see_secrets = true;
        self
    }

    /// A field the event does not allow (an `updatedInput` on PostToolUse, say) fails the run,
    /// instead of being reported as HookFailed and ignored.
    pub fn strict(mut self) -> Self {
        self.engine.strict = true;
        self
    }

    /// The most a command may print: more on stdout fails it (its decision would be cut); more
    /// on stderr is dropped (defaults: 1 MiB and 64 KiB).
    pub fn output_limits(mut self, stdout: usize, stderr: usize) -> Self {
        self.engine.limits = OutputLimits { stdout, stderr };
        self
    }

    /// The settings these hooks run.
    pub fn settings(&self) -> &HookSettings {
        &self.engine.settings
    }

    /// One handler of `event` under `matcher`, named `name`, in the project `dir` (the current
    /// directory when `None`): what a hook built in Rust ([`CommandHook`](crate::CommandHook), a webhook) becomes.
    pub(crate) fn single(
        event: EventName,
        matcher: &str,
        spec: impl Into<HandlerSpec>,
        name: String,
        dir: Option<PathBuf>,
    ) -> Result<CommandHooks, SettingsError> {
        let mut settings = HookSettings::new();
        settings.add(event, matcher, spec)?;
        let hooks = CommandHooks::new(settings).named(name);
        Ok(match dir {
            Some(dir) => hooks.project_dir(dir),
            None => hooks,
        })
    }

    /// Names the hooks in errors and events.
    pub(crate) fn named(mut self, name: String) -> Self {
        self.engine.name = name;
        self
    }
}
