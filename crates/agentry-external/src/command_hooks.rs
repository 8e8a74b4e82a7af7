//! Command hooks as one agentry hook: settings, where scripts run, and how failures count.

use crate::error::SettingsError;
use crate::event_name::EventName;
use crate::persistent::{Persistent, PersistentSpec};
use crate::process::OutputLimits;
use crate::settings::HookSettings;
use crate::spec::CommandSpec;
use crate::tool_names::ToolNames;
use crate::transcript::Transcripts;
use agentry_core::hooks::{BoxError, Events, HookExt, HookRegistration, IntoHook, StoredHook};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What the hooks remember of one run under way.
#[derive(Default)]
pub(crate) struct RunMemo {
    /// Consecutive stops a Stop hook blocked.
    pub(crate) stop_blocks: u32,
    /// PreToolUse context waiting for its call's result, by call id.
    pub(crate) contexts: HashMap<String, String>,
    /// The text of the run's last assistant message.
    pub(crate) last_assistant: Option<String>,
}

/// The shared state behind registered command hooks.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) settings: HookSettings,
    pub(crate) project_dir: PathBuf,
    pub(crate) plugin_root: Option<PathBuf>,
    pub(crate) plugin_data: Option<PathBuf>,
    pub(crate) state_dir: PathBuf,
    pub(crate) tool_names: ToolNames,
    pub(crate) fail_closed: bool,
    pub(crate) strict: bool,
    pub(crate) limits: OutputLimits,
    pub(crate) transcripts: Transcripts,
    pub(crate) runs: Mutex<HashMap<String, RunMemo>>,
    pub(crate) sessions: Mutex<HashSet<String>>,
    /// The persistent processes, one per spec, started on first use.
    pub(crate) processes: Mutex<HashMap<PersistentSpec, Arc<Persistent>>>,
    /// The HTTP client webhooks share, made at the first delivery.
    pub(crate) http: OnceLock<Result<reqwest::Client, String>>,
    /// Context background commands gave, by run id, for the run's next model call.
    pub(crate) later: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Inner {
    /// The persistent process of `spec`.
    pub(crate) fn persistent(&self, spec: &PersistentSpec) -> Arc<Persistent> {
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(spec.clone())
            .or_insert_with(|| Arc::new(Persistent::new(spec.clone())))
            .clone()
    }
}

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
    inner: Inner,
}

impl CommandHooks {
    /// Command hooks from settings; the project directory is the current directory.
    pub fn new(settings: HookSettings) -> Self {
        let project_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        CommandHooks {
            inner: Inner {
                name: "command hooks".into(),
                settings,
                state_dir: default_state_dir(&project_dir),
                project_dir,
                plugin_root: None,
                plugin_data: None,
                tool_names: ToolNames::claude_code(),
                fail_closed: false,
                strict: false,
                limits: OutputLimits {
                    stdout: 1 << 20,
                    stderr: 64 << 10,
                },
                transcripts: Transcripts::default(),
                runs: Mutex::new(HashMap::new()),
                sessions: Mutex::new(HashSet::new()),
                processes: Mutex::new(HashMap::new()),
                http: OnceLock::new(),
                later: Arc::default(),
            },
        }
    }

    /// Command hooks from a settings file (`.claude/settings.json`, a plugin's
    /// `hooks/hooks.json`, ...). For a file in a `.claude` directory, the project directory is
    /// that directory's parent; otherwise the current directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SettingsError> {
        let path = path.as_ref();
        let settings = HookSettings::load(path)?;
        let mut hooks = CommandHooks::new(settings);
        hooks.inner.name = format!("command hooks of {}", path.display());
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
        if self.inner.state_dir == default_state_dir(&self.inner.project_dir) {
            self.inner.state_dir = default_state_dir(&dir);
        }
        self.inner.project_dir = dir;
        self
    }

    /// Runs the hooks as a plugin's: `CLAUDE_PLUGIN_ROOT` (and `CLAUDE_PLUGIN_DATA` when given)
    /// are set and substituted into exec-form commands.
    pub fn plugin(mut self, root: impl Into<PathBuf>, data: Option<PathBuf>) -> Self {
        self.inner.plugin_root = Some(root.into());
        self.inner.plugin_data = data;
        self
    }

    /// Where transcripts (`<session>.jsonl`) and session environment files go (default:
    /// `$AGENTRY_HOME/projects/<project>/`, with `AGENTRY_HOME` defaulting to `~/.agentry`).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.inner.state_dir = dir.into();
        self
    }

    /// The names tools are presented under (default: [`ToolNames::claude_code`]).
    pub fn tool_names(mut self, names: ToolNames) -> Self {
        self.inner.tool_names = names;
        self
    }

    /// A command that fails, times out or breaks the protocol fails the run (with an error naming
    /// it and the event), instead of being reported and passed over.
    pub fn fail_closed(mut self) -> Self {
        self.inner.fail_closed = true;
        self
    }

    /// A field the event does not allow (an `updatedInput` on PostToolUse, say) fails the run,
    /// instead of being reported as HookFailed and ignored.
    pub fn strict(mut self) -> Self {
        self.inner.strict = true;
        self
    }

    /// The most a command may print: more on stdout fails it (its decision would be cut); more
    /// on stderr is dropped (defaults: 1 MiB and 64 KiB).
    pub fn output_limits(mut self, stdout: usize, stderr: usize) -> Self {
        self.inner.limits = OutputLimits { stdout, stderr };
        self
    }

    /// The settings these hooks run.
    pub fn settings(&self) -> &HookSettings {
        &self.inner.settings
    }

    /// The agentry events these hooks need.
    fn wants(&self) -> Events {
        let mut events = Events::empty();
        for g in &self.inner.settings.groups {
            events |= g.event.wants();
        }
        if events.is_empty() {
            return events;
        }
        // The transcript follows every message; a run's end clears what was kept for it;
        // PreToolUse context waits for the call's result.
        events |= Events::MESSAGE_ADDED | Events::RUN_END | Events::RUN_FAILED;
        if self.inner.has(EventName::PreToolUse) {
            events |= Events::AFTER_TOOL | Events::TOOL_FAILED;
        }
        // Background commands' context reaches the model on its next call.
        let background = self.inner.settings.groups.iter().any(|g| {
            g.hooks
                .iter()
                .any(|h| matches!(h, crate::spec::HandlerSpec::Command(c) if c.background))
        });
        if background {
            events |= Events::BEFORE_MODEL;
        }
        events
    }

    /// Names the hooks in errors and events.
    /// One handler of `event` under `matcher`, named `name`, in the project `dir` (the current
    /// directory when `None`): what a hook built in Rust ([`CommandHook`], a webhook) becomes.
    pub(crate) fn single(
        event: EventName,
        matcher: &str,
        spec: impl Into<crate::spec::HandlerSpec>,
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

    pub(crate) fn named(mut self, name: String) -> Self {
        self.inner.name = name;
        self
    }

    /// The longest any of these handlers may take (every try of a webhook), plus the time to
    /// kill and reap a command.
    fn longest(&self) -> Duration {
        let longest = self
            .inner
            .settings
            .groups
            .iter()
            .flat_map(|g| {
                g.hooks
                    .iter()
                    .map(move |h| h.worst_case(g.event.default_timeout()))
            })
            .max()
            .unwrap_or(Duration::ZERO);
        longest + Duration::from_secs(5)
    }
}

/// What [`CommandHooks`] stores with a run's checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSpec {
    name: String,
    settings: serde_json::Value,
    project_dir: PathBuf,
    state_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin_root: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin_data: Option<PathBuf>,
    tool_names: ToolNames,
    fail_closed: bool,
    strict: bool,
    stdout_limit: usize,
    stderr_limit: usize,
}

/// Command hooks are data: attached to a run with
/// [`RunOptions::with_stored`](agentry_core::RunOptions::with_stored), their settings and options
/// are stored with its checkpoints (secrets stay `${VAR}` templates), and a runtime told
/// `restores::<CommandHooks>()` builds them again when it resumes the run, in any process.
impl StoredHook for CommandHooks {
    const KIND: &'static str = "agentry-external/command-hooks";

    fn spec(&self) -> serde_json::Value {
        let i = &self.inner;
        serde_json::to_value(StoredSpec {
            name: i.name.clone(),
            settings: i.settings.to_value(),
            project_dir: i.project_dir.clone(),
            state_dir: i.state_dir.clone(),
            plugin_root: i.plugin_root.clone(),
            plugin_data: i.plugin_data.clone(),
            tool_names: i.tool_names.clone(),
            fail_closed: i.fail_closed,
            strict: i.strict,
            stdout_limit: i.limits.stdout,
            stderr_limit: i.limits.stderr,
        })
        .expect("command hook specs serialize")
    }

    fn from_spec(spec: &serde_json::Value) -> Result<Self, BoxError> {
        let s: StoredSpec = serde_json::from_value(spec.clone())?;
        let settings = HookSettings::from_value(&s.settings)?;
        let mut hooks = CommandHooks::new(settings)
            .project_dir(s.project_dir)
            .state_dir(s.state_dir)
            .tool_names(s.tool_names)
            .output_limits(s.stdout_limit, s.stderr_limit);
        hooks.inner.name = s.name;
        hooks.inner.plugin_root = s.plugin_root;
        hooks.inner.plugin_data = s.plugin_data;
        hooks.inner.fail_closed = s.fail_closed;
        hooks.inner.strict = s.strict;
        Ok(hooks)
    }
}

/// `$AGENTRY_HOME/projects/<project path with separators as dashes>`.
fn default_state_dir(project: &Path) -> PathBuf {
    let home = std::env::var_os("AGENTRY_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".agentry")))
        .unwrap_or_else(|| std::env::temp_dir().join("agentry"));
    let slug: String = project
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join("projects").join(slug)
}

impl IntoHook for CommandHooks {
    fn into_hook(self) -> HookRegistration {
        self.into_hook_and_sessions().0
    }
}

impl CommandHooks {
    /// The hook to register, and a handle that ends sessions spanning several runs (a chat)
    /// with SessionEnd hooks ([`Sessions::end`](crate::Sessions::end)).
    pub fn into_hook_and_sessions(self) -> (HookRegistration, crate::Sessions) {
        let wants = self.wants();
        let timeout = self.longest();
        let name = self.inner.name.clone();
        let inner = Arc::new(self.inner);
        let hook = crate::plugin::Plugin {
            inner: inner.clone(),
            wants,
        }
        .into_hook()
        .named(name)
        .timeout(timeout);
        (hook, crate::Sessions { inner })
    }
}

/// A session id as a file name may hold it: characters other than ASCII letters, digits, `-`,
/// `_` and `.` become `_`.
pub(crate) fn safe_session_id(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One command hook built in Rust: an event, a matcher and a command.
///
/// ```
/// use agentry_core::hooks::Hooks;
/// use agentry_external::{CommandHook, EventName};
/// use std::time::Duration;
/// let mut hooks = Hooks::new();
/// hooks.add(
///     CommandHook::new(EventName::PreToolUse, "python3 .claude/hooks/guard.py")
///         .matcher("Bash|Write")
///         .timeout(Duration::from_secs(10)),
/// );
/// ```
pub struct CommandHook {
    event: EventName,
    matcher: String,
    spec: CommandSpec,
    project_dir: Option<PathBuf>,
    fail_closed: bool,
}

impl CommandHook {
    /// Runs the shell command line `command` on `event`, for every tool (or source).
    pub fn new(event: EventName, command: impl Into<String>) -> Self {
        CommandHook::with_spec(event, CommandSpec::shell(command))
    }

    /// Runs `spec` on `event`.
    pub fn with_spec(event: EventName, spec: CommandSpec) -> Self {
        CommandHook {
            event,
            matcher: String::new(),
            spec,
            project_dir: None,
            fail_closed: false,
        }
    }

    /// Only where `matcher` applies (see [`Matcher`](crate::Matcher)). An invalid regular
    /// expression makes registration panic with the error; use [`HookSettings::add`] to handle it.
    pub fn matcher(mut self, matcher: impl Into<String>) -> Self {
        self.matcher = matcher.into();
        self
    }

    /// The command's time limit (default: the event's, 10 minutes for most).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec.timeout_ms = Some(timeout.as_millis().max(1) as u64);
        self
    }

    /// The project root (default: the current directory).
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// Fails the run when the command fails (see [`CommandHooks::fail_closed`]).
    pub fn fail_closed(mut self) -> Self {
        self.fail_closed = true;
        self
    }

    /// The hook as a one-command [`CommandHooks`], to configure further.
    pub fn into_hooks(self) -> Result<CommandHooks, SettingsError> {
        let name = format!("command hook `{}`", self.spec.display());
        let mut hooks =
            CommandHooks::single(self.event, &self.matcher, self.spec, name, self.project_dir)?;
        if self.fail_closed {
            hooks = hooks.fail_closed();
        }
        Ok(hooks)
    }
}

impl IntoHook for CommandHook {
    fn into_hook(self) -> HookRegistration {
        match self.into_hooks() {
            Ok(hooks) => hooks.into_hook(),
            Err(e) => panic!("{e}"),
        }
    }
}
