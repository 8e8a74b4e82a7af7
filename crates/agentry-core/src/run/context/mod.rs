//! What a hook or tool can see and do while a run is under way, and what the engine running it
//! does with the same run.
//!
//! - [`RunContext`] is the run as hooks and tools see it: ids, the agent, the step, session and
//!   metadata, cancellation and deadlines, the state, custom events, redaction. Hooks receive it
//!   inside a [`HookCtx`], tools inside a [`ToolCtx`]; both hand it out with `run()` and repeat
//!   its everyday methods.
//! - [`RunEngine`] is the same run as the engine drives it: step numbers, notices left by hooks
//!   and tools, the event stream and the recorded history, the state at the end. Only runtimes
//!   hold one; nothing a hook receives leads to it.

mod engine;
mod hook_ctx;
mod shortcuts;
mod tool_ctx;

pub use engine::RunEngine;
pub use hook_ctx::HookCtx;
pub(crate) use hook_ctx::LentHookCtx;
pub use tool_ctx::ToolCtx;

use crate::StopReason;
use crate::run::HookName;
use crate::run::events::RunEvent;
use crate::state::{ErasedState, StateError, StateSource};
use futures::channel::mpsc::UnboundedSender;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Identity of a run that children inherit: session, user, tags, metadata.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// The conversation this run belongs to.
    pub session_id: Option<String>,
    /// The user the run acts for.
    pub user_id: Option<String>,
    /// Free-form tags.
    pub tags: Vec<String>,
    /// Free-form metadata.
    pub metadata: serde_json::Map<String, Value>,
    /// The id of the outermost run of this run's tree: sub-agents' runs inherit it with the rest
    /// of this record. `None` when the runtime did not set it (then a run is its own root).
    pub root_run_id: Option<String>,
}

/// Something that happened inside a tool or hook and that the engine reports once the tool or
/// hook returns: a state change, or a custom event.
#[derive(Clone, Debug)]
pub enum Notice {
    /// The state changed.
    State {
        /// The state before.
        previous: Value,
        /// The state after.
        current: Value,
        /// Who changed it.
        source: StateSource,
    },
    /// A custom event.
    Custom {
        /// The event name.
        name: String,
        /// Its data.
        data: Value,
    },
    /// Part of a hook failed and the run goes on: a hook that runs several handlers (external
    /// commands, say) reports the one that failed, to be seen as an advisory HookFailed.
    HookFailed {
        /// The failing part, as errors name it (a script, a URL).
        hook: HookName,
        /// The event it handled.
        event: crate::run::EventKind,
        /// How long it ran.
        duration: Duration,
        /// What went wrong.
        error: String,
    },
}

/// Everything needed to create a run's context ([`RunEngine::new`]); used by runtimes.
///
/// `RunContextSpec::new(run_id, agent_name)` fills the rest with a top-level run's defaults (no
/// state, no event stream, no redactor, a 60-second hook timeout); set the fields that differ
/// with struct update syntax or the `with_*` methods.
pub struct RunContextSpec {
    /// The run id.
    pub run_id: String,
    /// The parent run, for sub-agent runs.
    pub parent_run_id: Option<String>,
    /// The agent's name.
    pub agent_name: Arc<str>,
    /// `parent/child` path of agent names.
    pub agent_path: Arc<str>,
    /// Session, user, tags, metadata.
    pub info: Arc<RunInfo>,
    /// Cancels the run.
    pub cancel: CancellationToken,
    /// The initial state.
    pub state: Box<dyn ErasedState>,
    /// Whether state changes are observed (StateChange hooks, an event stream, ...): when false,
    /// an update does not serialize the state.
    pub observe_state: bool,
    /// Where [`RunEvent`]s go, if anyone listens.
    pub events: Option<UnboundedSender<RunEvent>>,
    /// The first step number.
    pub step: u32,
    /// Masks secrets in what the run reports (events, and what hooks record through
    /// [`RunContext::redact`]).
    pub redactor: Option<Arc<dyn crate::Redact>>,
    /// Whether the run's events are kept for its store's event history (see
    /// [`RunContext::take_recorded`]).
    pub record_events: bool,
    /// The history of the run this one is nested in (a sub-agent's parent's, from
    /// [`RunEngine::history`]): when the run records its events, that history records them
    /// too. `None` for a run of its own.
    pub enclosing_history: Option<crate::run::recorded::RecordedHistory>,
    /// How long an async hook without a timeout of its own may take (see
    /// [`RunContext::hook_timeout`]).
    pub hook_timeout: Duration,
    /// How deep the run is nested: 0 for a run started on its own, its parent's plus one for a
    /// sub-agent's run or a run started inside another run's tool or hook.
    pub depth: u32,
}

/// How long an async hook without a timeout of its own may take, unless the runtime says.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

impl RunContextSpec {
    /// A top-level run `run_id` of `agent_name`, with no state, no event stream, no redactor,
    /// and [`DEFAULT_HOOK_TIMEOUT`].
    pub fn new(run_id: impl Into<String>, agent_name: impl Into<Arc<str>>) -> Self {
        let agent_name = agent_name.into();
        RunContextSpec {
            run_id: run_id.into(),
            parent_run_id: None,
            agent_path: agent_name.clone(),
            agent_name,
            info: Arc::default(),
            cancel: CancellationToken::new(),
            state: Box::new(()),
            observe_state: false,
            events: None,
            step: 0,
            redactor: None,
            record_events: false,
            enclosing_history: None,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            depth: 0,
        }
    }

    /// The same spec with this initial state.
    pub fn with_state<S: crate::AgentState>(mut self, state: S) -> Self {
        self.state = Box::new(state);
        self
    }

    /// The same spec with this session, user, tags and metadata.
    pub fn with_info(mut self, info: RunInfo) -> Self {
        self.info = Arc::new(info);
        self
    }
}

impl Default for RunContextSpec {
    /// A top-level run `run` of the agent `agent`: see [`RunContextSpec::new`].
    fn default() -> Self {
        RunContextSpec::new("run", "agent")
    }
}

struct RunShared {
    run_id: String,
    parent_run_id: Option<String>,
    /// A sub-agent's run id, as its events name it (`None` for a run of its own).
    sub_run: Option<Arc<str>>,
    agent_name: Arc<str>,
    agent_path: Arc<str>,
    info: Arc<RunInfo>,
    cancel: CancellationToken,
    step: AtomicU32,
    state: Mutex<Box<dyn ErasedState>>,
    observe_state: bool,
    dirty: AtomicBool,
    notices: Mutex<Vec<Notice>>,
    events: Option<UnboundedSender<RunEvent>>,
    redactor: Option<Arc<dyn crate::Redact>>,
    recorded: Option<crate::run::recorded::RecordedHistory>,
    hook_timeout: Duration,
    depth: u32,
    /// The earliest deadline set with [`RunContext::stop_at`], and the stop it brings.
    stop_at: Mutex<Option<(Instant, StopReason)>>,
    /// True once a deadline is set: the check of every step is then one atomic load.
    has_stop_at: AtomicBool,
    /// Wakes the runtime when a deadline is set.
    stop_at_set: Notify,
    /// Hooks whose HookStarted fired and whose HookFinished or HookFailed has not (only kept
    /// while meta events are observed).
    open_hooks: Mutex<Vec<OpenHook>>,
}

/// A hook under way, as the meta events see it: its name, its event, and when it started.
#[derive(Clone, Debug)]
pub struct OpenHook {
    /// The hook's name.
    pub hook: HookName,
    /// The event it handles.
    pub event: crate::run::EventKind,
    /// When it started.
    pub started: std::time::Instant,
    /// Whether its failure lets the run go on.
    pub advisory: bool,
}

/// One run as hooks and tools see it. Cheap to clone (one `Arc`).
///
/// Hooks get it inside a [`HookCtx`] and tools inside a [`ToolCtx`] (`ctx.run()`); the engine
/// that runs the run holds the same run as a [`RunEngine`].
#[derive(Clone)]
pub struct RunContext(Arc<RunShared>);

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("run_id", &self.0.run_id)
            .field("agent_path", &self.0.agent_path)
            .field("step", &self.step())
            .finish_non_exhaustive()
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RunContext {
    /// The context of a run that no runtime drives, for testing a hook or a tool on its own
    /// (see also [`HookCtx::detached`] and [`ToolCtx::detached`]): `spec`'s ids, agent and state,
    /// and nothing listening to its events.
    ///
    /// ```
    /// use agentry_core::{RunContext, RunContextSpec};
    /// let run = RunContext::detached(RunContextSpec::new("r-1", "planner").with_state(3u32));
    /// assert_eq!(run.agent_path(), "planner");
    /// assert_eq!(run.state::<u32>().unwrap(), 3);
    /// ```
    pub fn detached(spec: RunContextSpec) -> Self {
        RunContext::create(spec)
    }

    pub(crate) fn create(spec: RunContextSpec) -> Self {
        RunContext(Arc::new(RunShared {
            sub_run: spec
                .parent_run_id
                .is_some()
                .then(|| Arc::from(spec.run_id.as_str())),
            run_id: spec.run_id,
            parent_run_id: spec.parent_run_id,
            agent_name: spec.agent_name,
            agent_path: spec.agent_path,
            info: spec.info,
            cancel: spec.cancel,
            step: AtomicU32::new(spec.step),
            state: Mutex::new(spec.state),
            observe_state: spec.observe_state,
            dirty: AtomicBool::new(false),
            notices: Mutex::new(Vec::new()),
            events: spec.events,
            redactor: spec.redactor,
            recorded: spec.record_events.then(|| match spec.enclosing_history {
                Some(enclosing) => crate::run::recorded::RecordedHistory::nested_in(enclosing),
                None => crate::run::recorded::RecordedHistory::new(),
            }),
            hook_timeout: spec.hook_timeout,
            depth: spec.depth,
            stop_at: Mutex::new(None),
            has_stop_at: AtomicBool::new(false),
            stop_at_set: Notify::new(),
            open_hooks: Mutex::new(Vec::new()),
        }))
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.0.run_id
    }
    /// The parent run id, for a sub-agent run.
    pub fn parent_run_id(&self) -> Option<&str> {
        self.0.parent_run_id.as_deref()
    }
    /// The id of the outermost run of this run's tree: this run's own id unless it is a
    /// sub-agent's run.
    pub fn root_run_id(&self) -> &str {
        self.0.info.root_run_id.as_deref().unwrap_or(&self.0.run_id)
    }
    /// The name of the agent running.
    pub fn agent_name(&self) -> &str {
        &self.0.agent_name
    }
    /// The path of agent names from the outermost run, `parent/child`.
    pub fn agent_path(&self) -> &str {
        &self.0.agent_path
    }
    /// The current step (1-based; 0 before the first step).
    pub fn step(&self) -> u32 {
        self.0.step.load(Ordering::Relaxed)
    }
    /// The session id.
    pub fn session_id(&self) -> Option<&str> {
        self.0.info.session_id.as_deref()
    }
    /// The user id.
    pub fn user_id(&self) -> Option<&str> {
        self.0.info.user_id.as_deref()
    }
    /// The run's tags.
    pub fn tags(&self) -> &[String] {
        &self.0.info.tags
    }
    /// The run's metadata.
    pub fn metadata(&self) -> &serde_json::Map<String, Value> {
        &self.0.info.metadata
    }
    /// Session, user, tags and metadata together.
    pub fn info(&self) -> &Arc<RunInfo> {
        &self.0.info
    }
    /// The run's cancellation token: cancelled when the run is; a hook or tool may cancel it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.0.cancel
    }
    /// True once the run is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.is_cancelled()
    }

    /// Ends the run with `reason` at `deadline`, even in the middle of a model turn, a tool call
    /// or a sub-agent: what is in flight then is dropped, calls of the turn that got no result
    /// get an error result saying why, and the run ends with `reason` (Stop and RunEnd hooks
    /// see it). The earliest of several deadlines stands. The built-in guards set their wall-time
    /// limit this way.
    pub fn stop_at(&self, deadline: impl Into<Instant>, reason: StopReason) {
        let deadline = deadline.into();
        let mut slot = lock(&self.0.stop_at);
        if slot.as_ref().is_some_and(|(at, _)| *at <= deadline) {
            return;
        }
        *slot = Some((deadline, reason));
        self.0.has_stop_at.store(true, Ordering::Release);
        drop(slot);
        self.0.stop_at_set.notify_one();
    }

    /// The earliest deadline set with [`stop_at`](Self::stop_at), and its stop reason.
    pub fn stop_deadline(&self) -> Option<(Instant, StopReason)> {
        lock(&self.0.stop_at).clone()
    }

    /// Notes that a hook started, as HookStarted reported (the hook engine calls this).
    pub(crate) fn hook_opened(
        &self,
        hook: &HookName,
        event: crate::run::EventKind,
        advisory: bool,
    ) {
        lock(&self.0.open_hooks).push(OpenHook {
            hook: hook.clone(),
            event,
            started: std::time::Instant::now(),
            advisory,
        });
    }

    /// Notes that a hook finished or failed, as HookFinished or HookFailed reported.
    pub(crate) fn hook_closed(&self, hook: &HookName, event: crate::run::EventKind) {
        let mut open = lock(&self.0.open_hooks);
        if let Some(at) = open
            .iter()
            .rposition(|h| h.hook == *hook && h.event == event)
        {
            open.swap_remove(at);
        }
    }

    /// How long an async hook of this run may take when it has no timeout of its own (the
    /// runtime's default; a hook that overruns it fails per its policy, naming this timeout).
    pub fn hook_timeout(&self) -> Duration {
        self.0.hook_timeout
    }

    /// How deep the run is nested: 0 for a run started on its own, one more for each sub-agent
    /// (or run started inside a tool or hook) between it and that run.
    pub fn depth(&self) -> u32 {
        self.0.depth
    }

    /// A copy of the state, typed.
    pub fn state<S: 'static + Clone>(&self) -> Result<S, StateError> {
        self.with_state(|s: &S| s.clone())
    }

    /// Reads the state, typed, without copying it.
    pub fn with_state<S: 'static, R>(&self, read: impl FnOnce(&S) -> R) -> Result<R, StateError> {
        let guard = lock(&self.0.state);
        match guard.as_any().downcast_ref::<S>() {
            Some(s) => Ok(read(s)),
            None => Err(StateError::TypeMismatch {
                asked: std::any::type_name::<S>(),
                actual: guard.type_name(),
            }),
        }
    }

    /// The state as JSON.
    pub fn state_json(&self) -> Result<Value, StateError> {
        lock(&self.0.state).to_json()
    }

    /// Updates the state, typed, recording `source` as who changed it. The engine fires
    /// StateChange (and streams a JSON Patch) once the tool or hook that called this returns.
    pub fn update_state_as<S: 'static, R>(
        &self,
        source: impl FnOnce() -> StateSource,
        update: impl FnOnce(&mut S) -> R,
    ) -> Result<R, StateError> {
        let mut guard = lock(&self.0.state);
        let actual = guard.type_name();
        let previous = if self.0.observe_state {
            Some(guard.to_json()?)
        } else {
            None
        };
        let Some(s) = guard.as_any_mut().downcast_mut::<S>() else {
            return Err(StateError::TypeMismatch {
                asked: std::any::type_name::<S>(),
                actual,
            });
        };
        let out = update(s);
        if let Some(previous) = previous {
            let current = guard.to_json()?;
            drop(guard);
            if previous != current {
                self.notify(Notice::State {
                    previous,
                    current,
                    source: source(),
                });
            }
        }
        Ok(out)
    }

    /// Emits a custom event: Custom hooks see it and the event stream carries it.
    pub fn emit(&self, name: impl Into<String>, data: impl Into<Value>) {
        self.notify(Notice::Custom {
            name: name.into(),
            data: data.into(),
        });
    }

    /// Reports that part of a hook failed while the hook itself goes on (a hook that runs
    /// several handlers, such as external commands, uses it for the one that failed open): the
    /// run reports it as an advisory HookFailed naming `hook` and `event`, and logs it.
    pub fn report_hook_failure(
        &self,
        hook: impl Into<HookName>,
        event: crate::run::EventKind,
        duration: Duration,
        error: impl Into<String>,
    ) {
        let (hook, error) = (hook.into(), error.into());
        self.stream_hook_failure(&hook, event, &error);
        self.notify(Notice::HookFailed {
            hook,
            event,
            duration,
            error,
        });
    }

    /// Streams that `hook` failed on `event` with `error` and the run goes on (a `hook_failed`
    /// run event, masked by the run's redactor), when the run has an event stream.
    pub(crate) fn stream_hook_failure(
        &self,
        hook: &str,
        event: crate::run::EventKind,
        error: &str,
    ) {
        if !self.has_event_stream() {
            return;
        }
        self.send_event(|path| RunEvent::HookFailed {
            hook: hook.to_owned(),
            event,
            error: error.to_owned(),
            agent_path: path.clone(),
            run_id: None,
        });
    }

    fn notify(&self, notice: Notice) {
        lock(&self.0.notices).push(notice);
        self.0.dirty.store(true, Ordering::Release);
    }

    /// True when someone listens to this run's events: an event stream, or the store's event
    /// history.
    pub fn has_event_stream(&self) -> bool {
        self.0.events.is_some() || self.0.recorded.is_some()
    }

    /// Sends an event to the run's stream and records it for the store's event history, masked
    /// by the run's redactor; `make` is only called when someone listens.
    pub(crate) fn send_event(&self, make: impl FnOnce(&Arc<str>) -> RunEvent) {
        if !self.has_event_stream() {
            return;
        }
        let mut event = make(&self.0.agent_path);
        if let Some(run) = &self.0.sub_run {
            event = event.with_run_id(run);
        }
        let event = match &self.0.redactor {
            Some(r) => event.redacted(&**r),
            None => event,
        };
        // Recorded and sent under one lock: the stream's recorded events come in the order the
        // history holds them, even from tool calls on other threads (a server numbers them by
        // that order, so a client that reconnects goes on at the right event).
        // A sub-agent's event goes into each enclosing run's history too, under the outermost
        // one's lock: the stream a server follows is the outermost run's.
        let held = self
            .0
            .recorded
            .as_ref()
            .and_then(|history| Some(history.record(event.to_recorded()?)));
        if let Some(tx) = &self.0.events {
            let _ = tx.unbounded_send(event);
        }
        drop(held);
    }

    /// Sends a custom event to the run's event stream (and its recorded history) at once, while
    /// the tool or hook that sends it still runs: progress, say. Custom hooks do not see it;
    /// [`emit`](Self::emit) reports an event to them and to the stream once the tool or hook
    /// returns. Costs nothing when nobody listens ([`has_event_stream`](Self::has_event_stream)).
    pub fn stream_custom(&self, name: &str, data: impl FnOnce() -> Value) {
        if !self.has_event_stream() {
            return;
        }
        self.send_event(|path| RunEvent::Custom {
            name: name.to_string(),
            data: data(),
            agent_path: path.clone(),
            run_id: None,
        });
    }

    /// `text` with secrets masked by the run's redactor (unchanged when it has none). Hooks
    /// that keep or export what they see (telemetry, audit logs, recorders) pass text through
    /// this.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.0.redactor {
            Some(r) => r.redact(text),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    /// `value` with secrets masked in every string (unchanged when the run has no redactor).
    pub fn redact_value(&self, mut value: serde_json::Value) -> serde_json::Value {
        if let Some(r) = &self.0.redactor {
            crate::redact::redact_value(&**r, &mut value);
        }
        value
    }
}
