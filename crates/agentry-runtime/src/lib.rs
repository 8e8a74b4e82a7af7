//! # agentry-runtime
//!
//! The in-process runtime of agentry: [`Runtime`] runs agents on tokio. It executes what the
//! core step machine (`agentry_core::run::RunMachine`) decides: it opens steps (BeforeStep, the
//! model call with its hooks), runs tool calls (BeforeTool, approvals, the tool, AfterTool),
//! closes steps, checkpoints to a store and ends runs, and feeds each result back to the machine.
//! The machine alone decides what comes next.
//!
//! [`effects`] is the same work for other executors: each effect of a step as a call of its own,
//! its hooks included, which the Temporal workflow of `agentry-temporal` runs as activities.
//!
//! Most users reach this crate through the `agentry` facade (`agentry::Runtime`), which adds
//! the built-in hooks and the model providers.
#![warn(missing_docs, unreachable_pub)]

mod cancel;
mod compact;
mod driver;
mod drivers;
pub mod effects;
mod handle;
mod held_text;
mod lease;
mod limits;
mod model_call;
mod model_request;
mod nesting;
mod open_calls;
mod request;
mod resume;
mod scope;
mod session;
mod sub_agent;
mod tool_call;

pub use handle::{RunEvents, RunHandle};
pub use limits::{
    DEFAULT_MAX_TOOL_CALLS_PER_TURN, DEFAULT_MAX_TOOL_INPUT_BYTES, DEFAULT_MAX_TOOL_RESULT_BYTES,
};
pub use request::{ResumeFrom, ResumeRequest, RunRequest};

use agentry_core::hooks::{
    BoxError, HookHandle, HookRegistration, Hooks, IntoHook, LiveHooks, StoredHook,
};
use agentry_core::{
    AgentState, Decision, Error, Model, PendingApproval, Redact, RunOutput, RunStore, StateError,
    StoredToolSource, ToolSource, match_decisions,
};
use driver::{Driver, Finished, Start};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct RuntimeInner {
    hooks: Arc<Hooks>,
    default_model: Option<Arc<dyn Model>>,
    store: Option<Arc<dyn RunStore>>,
    redactor: Option<Arc<dyn Redact>>,
    /// How long a run's lease lasts unless renewed.
    lease_ttl: std::time::Duration,
    /// Time and nesting limits.
    limits: limits::Limits,
    /// How to build stored hooks again, by kind.
    restorers: HashMap<&'static str, Restore>,
    /// Hooks registered while the runtime runs (shared by its clones).
    live: Arc<LiveHooks>,
}

/// Builds a stored hook or tool source from its spec.
type Restore = fn(&serde_json::Value) -> Result<Restored, BoxError>;

/// What a stored record builds again.
enum Restored {
    Hook(HookRegistration),
    Tools(Arc<dyn ToolSource>),
}

fn restore<H: StoredHook>(spec: &serde_json::Value) -> Result<Restored, BoxError> {
    H::from_spec(spec).map(|h| Restored::Hook(h.into_hook()))
}

fn restore_tools<T: StoredToolSource>(spec: &serde_json::Value) -> Result<Restored, BoxError> {
    T::from_spec(spec).map(|t| Restored::Tools(Arc::new(t)))
}

impl Default for RuntimeInner {
    fn default() -> Self {
        RuntimeInner {
            hooks: Arc::default(),
            default_model: None,
            store: None,
            redactor: None,
            lease_ttl: lease::DEFAULT_LEASE_TTL,
            limits: limits::Limits::default(),
            restorers: HashMap::new(),
            live: LiveHooks::new(),
        }
    }
}

/// Runs agents in-process on tokio. Cheap to clone; clones share hooks, default model and store.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry::Error> {
/// use agentry::prelude::*;
///
/// let agent = Agent::builder("greeter")
///     .model(ScriptedModel::new().text("Hello!"))
///     .build()?;
/// let out = Runtime::new().run(&agent, "Hi").await?;
/// assert_eq!(out.output.as_deref(), Some("Hello!"));
/// assert_eq!(out.stop, StopReason::FinalAnswer);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("hooks", &self.inner.hooks)
            .field(
                "default_model",
                &self
                    .inner
                    .default_model
                    .as_ref()
                    .map(|m| m.name().to_string()),
            )
            .field("store", &self.inner.store.is_some())
            .field("redactor", &self.inner.redactor.is_some())
            .finish()
    }
}

impl Runtime {
    /// A runtime with no hooks, no default model and no store.
    pub fn new() -> Self {
        Runtime::default()
    }

    /// Registers a runtime-scope hook: it sees every run (and every sub-agent run).
    pub fn with(mut self, hook: impl IntoHook) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        Arc::make_mut(&mut inner.hooks).add(hook);
        self
    }

    /// Registers a runtime-scope hook on a runtime that is already running (and on its clones):
    /// runs that start from now on see it, runs under way keep the hooks they started with, so a
    /// change never reaches an event under way. The handle unregisters it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use agentry::prelude::*;
    /// let runtime = Runtime::new();
    /// let handle = runtime.register(on::run_start(|ev, _ctx| async move { Ok(ev) }).named("audit"));
    /// assert_eq!(handle.name(), "audit");
    /// assert!(handle.unregister());
    /// # }
    /// ```
    pub fn register(&self, hook: impl IntoHook) -> HookHandle {
        self.inner.live.register(hook)
    }

    /// The registry behind [`register`](Self::register): to watch its changes
    /// ([`LiveHooks::subscribe`]) or to hand it to what registers hooks on its own (a settings
    /// file watcher).
    pub fn live_hooks(&self) -> &Arc<LiveHooks> {
        &self.inner.live
    }

    /// Lets this runtime build hooks of `H`'s kind again when it resumes a run that was started
    /// with one ([`RunOptions::with_stored`]): a run resumed in another process keeps its hooks
    /// that are data (external commands, webhooks). Resuming a run with a stored hook of a kind
    /// the runtime was not told of is an error that names the kind.
    pub fn restores<H: StoredHook>(mut self) -> Self {
        Arc::make_mut(&mut self.inner)
            .restorers
            .insert(H::KIND, restore::<H>);
        self
    }

    /// Lets this runtime build tool sources of `T`'s kind again when it resumes a run that was
    /// started with one ([`RunOptions::with_stored_tools`]): a run resumed in another process
    /// gets its MCP servers back (`Runtime::restores_tools::<agentry_mcp::McpServers>()`).
    /// Resuming a run with a stored source of a kind the runtime was not told of is an error that
    /// names the kind.
    pub fn restores_tools<T: StoredToolSource>(mut self) -> Self {
        Arc::make_mut(&mut self.inner)
            .restorers
            .insert(T::KIND, restore_tools::<T>);
        self
    }

    /// The model of agents that have none.
    pub fn default_model(mut self, model: impl Model) -> Self {
        Arc::make_mut(&mut self.inner).default_model = Some(Arc::new(model));
        self
    }

    /// Checkpoints every run to `store` after every step, so it can be resumed.
    pub fn store(mut self, store: impl RunStore) -> Self {
        Arc::make_mut(&mut self.inner).store = Some(Arc::new(store));
        self
    }

    /// How long a durable run's lease lasts unless renewed (30 s by default). While a process
    /// drives a run it renews the lease every third of this; a process that dies leaves its runs
    /// to be [resumed](Self::resume) by another once this much time passed since its last
    /// renewal, and until then a resume gets
    /// [`StoreError::Leased`](agentry_core::StoreError::Leased). Shorter means faster recovery
    /// after a crash, at the cost of more renewals.
    ///
    /// # Panics
    /// When `ttl` is zero.
    pub fn lease_ttl(mut self, ttl: std::time::Duration) -> Self {
        assert!(!ttl.is_zero(), "a lease must last longer than zero");
        Arc::make_mut(&mut self.inner).lease_ttl = ttl;
        self
    }

    /// How long an async hook (advisory ones too) may take when it was registered without a
    /// timeout of its own (`.timeout(..)`): 60 s by default. A hook that overruns it fails per
    /// its policy, with an error naming this default timeout. Synchronous hooks cannot be timed
    /// out (they must not block); around middleware is bounded by the call it wraps (the model
    /// turn timeout, the tool timeout) unless given a timeout of its own.
    ///
    /// # Panics
    /// When `limit` is zero.
    pub fn hook_timeout(mut self, limit: std::time::Duration) -> Self {
        assert!(!limit.is_zero(), "a hook timeout must be longer than zero");
        Arc::make_mut(&mut self.inner).limits.hook_timeout = limit;
        self
    }

    /// How long one model turn may take, from the request to the end of its stream, with the
    /// provider client's own retries and the around-model middleware: 600 s by default. A turn
    /// that overruns it fails the run (RunFailed hooks may recover) with a
    /// [`ModelError`](agentry_core::ModelError) of kind `Timeout` naming this timeout.
    ///
    /// # Panics
    /// When `limit` is zero.
    pub fn model_turn_timeout(mut self, limit: std::time::Duration) -> Self {
        assert!(
            !limit.is_zero(),
            "a model turn timeout must be longer than zero"
        );
        Arc::make_mut(&mut self.inner).limits.model_turn_timeout = limit;
        self
    }

    /// How long a model's stream may go without an event (a piece of text, reasoning, a tool
    /// call, usage, the end): 120 s by default. Keep-alive comments and pings are not events, so
    /// a server that sends only those cannot hold a run forever. A stream that goes quiet for
    /// longer fails the run (RunFailed hooks may recover) with a
    /// [`ModelError`](agentry_core::ModelError) of kind `Timeout` naming this timeout.
    ///
    /// # Panics
    /// When `limit` is zero.
    pub fn model_idle_timeout(mut self, limit: std::time::Duration) -> Self {
        assert!(
            !limit.is_zero(),
            "a model idle timeout must be longer than zero"
        );
        Arc::make_mut(&mut self.inner).limits.model_idle_timeout = limit;
        self
    }

    /// How long a tool call may take when its tool sets no limit of its own
    /// ([`Tool::timeout`](agentry_core::Tool::timeout), `tool(..).timeout(..)`): 300 s by
    /// default, with its around-tool middleware. A call that overruns it is dropped, and the
    /// model gets an error result naming the limit (after ToolFailed hooks, which may recover).
    /// Sub-agent calls are bounded by the sub-agent's own limits instead.
    ///
    /// # Panics
    /// When `limit` is zero.
    pub fn tool_timeout(mut self, limit: std::time::Duration) -> Self {
        assert!(!limit.is_zero(), "a tool timeout must be longer than zero");
        Arc::make_mut(&mut self.inner).limits.tool_timeout = limit;
        self
    }

    /// How deep runs may nest: a sub-agent is one level below its parent, and so is a run that a
    /// tool or hook starts (with this or any runtime) while its run is under way. 8 by default.
    /// A run that would go deeper is not started: the run that tried fails with
    /// [`Error::DepthLimit`] (a tool that called `Runtime::run` gets that error back). However
    /// deep, nested runs do not grow the stack: each is driven on a task of its own.
    pub fn max_depth(mut self, levels: u32) -> Self {
        Arc::make_mut(&mut self.inner).limits.max_depth = levels;
        self
    }

    /// How many bytes of arguments one tool call may have
    /// ([`DEFAULT_MAX_TOOL_INPUT_BYTES`], 1 MiB, by default). A call over it is not parsed or
    /// run: the model gets an error result that says so and names this limit, and the run
    /// goes on.
    ///
    /// # Panics
    /// When `bytes` is zero.
    pub fn max_tool_input_bytes(mut self, bytes: usize) -> Self {
        assert!(bytes > 0, "a tool input limit must be more than zero bytes");
        Arc::make_mut(&mut self.inner).limits.max_tool_input_bytes = bytes;
        self
    }

    /// How many bytes of text one tool result keeps ([`DEFAULT_MAX_TOOL_RESULT_BYTES`], 1 MiB,
    /// by default): a tool (a Rust tool, a built-in, an MCP server's) that returns more has its
    /// text cut there, with a note to the model that says how long it was and names this limit,
    /// before any AfterTool hook sees it or the history keeps it. Media parts are not counted.
    ///
    /// # Panics
    /// When `bytes` is zero.
    pub fn max_tool_result_bytes(mut self, bytes: usize) -> Self {
        assert!(
            bytes > 0,
            "a tool result limit must be more than zero bytes"
        );
        Arc::make_mut(&mut self.inner).limits.max_tool_result_bytes = bytes;
        self
    }

    /// How many tool calls of one model turn run ([`DEFAULT_MAX_TOOL_CALLS_PER_TURN`], 64, by
    /// default): the calls past it are not run, each answered with an error result that names
    /// this limit, and the run goes on.
    ///
    /// # Panics
    /// When `calls` is zero.
    pub fn max_tool_calls_per_turn(mut self, calls: usize) -> Self {
        assert!(calls > 0, "a turn must be allowed at least one tool call");
        Arc::make_mut(&mut self.inner)
            .limits
            .max_tool_calls_per_turn = calls;
        self
    }

    /// Masks secrets in everything runs report: their event streams and histories, and what
    /// hooks record through [`HookCtx::redact`](agentry_core::RunContext::redact) (the built-in
    /// telemetry and recorder do). What the model and the tools receive is not changed; see
    /// the `agentry` crate's `builtins::Redactor` for masking those too.
    pub fn redact(mut self, redactor: impl Redact) -> Self {
        Arc::make_mut(&mut self.inner).redactor = Some(Arc::new(redactor));
        self
    }

    /// The same runtime (hooks, limits, redactor, default model) without a store: its runs are
    /// checkpointed nowhere and appear in no listing. For dry runs and replays.
    pub fn without_store(&self) -> Runtime {
        let mut inner = (*self.inner).clone();
        inner.store = None;
        Runtime {
            inner: Arc::new(inner),
        }
    }

    /// The runtime-scope hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.inner.hooks
    }

    /// The store runs are checkpointed to, when the runtime has one (for what reads runs
    /// beside the runtime: listings, histories, a server's event streams).
    pub fn run_store(&self) -> Option<&Arc<dyn RunStore>> {
        self.inner.store.as_ref()
    }

    /// The redactor that masks secrets in what runs report, when the runtime has one (for
    /// what reports runs beside the runtime, so it masks them alike).
    pub fn redactor(&self) -> Option<&Arc<dyn Redact>> {
        self.inner.redactor.as_ref()
    }

    /// How long a durable run's lease lasts unless renewed ([`lease_ttl`](Self::lease_ttl)).
    pub fn lease_duration(&self) -> std::time::Duration {
        self.inner.lease_ttl
    }
}

/// Drives a run to its end: in place, or on a task of its own when it is started inside another
/// run (from a tool or hook), so nesting does not grow the stack.
async fn drive(driver: Box<Driver>, start: Start) -> Result<Finished, Error> {
    if nesting::enclosing().is_some() {
        Box::pin(nesting::drive_nested(driver, start)).await
    } else {
        driver.drive(start).await
    }
}

fn resume_error(run_id: &str, message: impl Into<String>) -> Error {
    Error::Resume {
        run_id: run_id.to_string(),
        message: message.into(),
    }
}

/// Checks that `decisions` decide every pending call exactly once, and nothing else.
fn check_decisions(
    run_id: &str,
    pending: &[PendingApproval],
    decisions: impl IntoIterator<Item = Decision>,
) -> Result<HashMap<String, Decision>, Error> {
    match_decisions(pending, decisions).map_err(|e| resume_error(run_id, e.to_string()))
}

fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Converts a finished run into its typed output.
fn typed<S: AgentState, O: DeserializeOwned>(done: Finished) -> Result<RunOutput<S, O>, Error> {
    let actual = done.state.type_name();
    let state = match done.state.into_any().downcast::<S>() {
        Ok(s) => *s,
        Err(_) => {
            return Err(Error::State(StateError::TypeMismatch {
                asked: std::any::type_name::<S>(),
                actual,
            }));
        }
    };
    let output = match done.output {
        Some(value) => Some(serde_json::from_value::<O>(value).map_err(|e| {
            Error::other(format!(
                "the run's output could not be read as `{}`: {e}",
                std::any::type_name::<O>()
            ))
        })?),
        None => None,
    };
    Ok(RunOutput {
        run_id: done.run_id,
        session_id: done.session_id,
        output,
        text: done.machine.last_text(),
        state,
        messages: done.machine.messages,
        usage: done.machine.usage,
        retried_usage: done.machine.retried_usage,
        steps: done.machine.step,
        model_calls: done.machine.model_calls,
        stop: done.stop,
    })
}
