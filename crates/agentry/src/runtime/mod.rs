//! The in-process runtime: runs agents on tokio.

mod compact;
mod driver;
pub mod effects;
mod handle;
mod lease;
mod limits;
mod model_call;
mod nesting;
mod open_calls;
mod scope;
mod session;
mod sub_agent;
mod tool_call;

use handle::Observe;
pub use handle::{RunEvents, RunHandle};

use agentry_core::hooks::{
    BoxError, HookHandle, HookRegistration, HookSpecRecord, Hooks, IntoHook, LiveHooks, StoredHook,
};
use agentry_core::run::approval::call_list;
use agentry_core::{
    Agent, AgentDef, AgentState, Decision, Error, MessageLog, Model, PendingApproval, Redact,
    RunContextSpec, RunEvent, RunInfo, RunMachine, RunOptions, RunOutput, RunSnapshot, RunStore,
    SNAPSHOT_VERSION, StateError, StopReason, StoredRun, StoredToolSource, ToolSource,
    match_decisions,
};
use driver::{Driver, Finished, Start, scoped_hooks};
use futures::channel::mpsc::{UnboundedSender, unbounded};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
    /// that overruns it fails the run (RunError hooks may recover) with a
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
    /// longer fails the run (RunError hooks may recover) with a
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
    /// model gets an error result naming the limit (after ToolError hooks, which may recover).
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

    /// Masks secrets in everything runs report: their event streams and histories, and what
    /// hooks record through [`HookCtx::redact`](agentry_core::RunContext::redact) (the built-in
    /// telemetry and recorder do). What the model and the tools receive is not changed; see
    /// [`Redactor`](crate::builtins::Redactor) for masking those too.
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

    /// Runs `agent` on `input` to the end.
    pub async fn run<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        input: impl Into<String>,
    ) -> Result<RunOutput<S, O>, Error> {
        self.run_with(agent, input, RunOptions::new()).await
    }

    /// Runs `agent` on `input` with options (ids, tags, metadata, run-scope hooks).
    pub async fn run_with<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunOutput<S, O>, Error> {
        // No named driver: it moves into `drive`, and a moved-out local would keep its own slot
        // in this future.
        typed(
            drive(
                self.driver(agent.def(), options, None, None)?,
                Start::New(input.into()),
            )
            .await?,
        )
    }

    /// Starts `agent` on `input` in a tokio task and returns a handle with its event stream.
    /// Definition errors (such as [`Error::NoModel`]) surface from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start<S: AgentState, O: DeserializeOwned + Send + 'static>(
        &self,
        agent: &Agent<S, O>,
        input: impl Into<String>,
        options: RunOptions,
    ) -> RunHandle<S, O> {
        let (tx, rx) = unbounded();
        let input = input.into();
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let options = RunOptions {
            run_id: Some(run_id.clone()),
            ..options
        };
        let cancel = CancellationToken::new();
        let driver = self.driver(agent.def(), options, Some(tx), Some(cancel.clone()));
        let join = tokio::spawn(async move { typed(driver?.drive(Start::New(input)).await?) });
        RunHandle {
            run_id,
            events: rx,
            cancel,
            join,
        }
    }

    /// Continues a run from a snapshot (a checkpoint from a store, or one you serialized), with
    /// the same agent definition. A run that ended can only be resumed if it was cancelled; a
    /// paused run is continued with [`decide`](Self::decide).
    pub async fn resume_snapshot<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = match &self.inner.store {
            Some(store) => store.load(&snapshot.run_id).await?,
            None => None,
        };
        self.continue_run(
            agent,
            snapshot,
            stored.as_ref(),
            HashMap::new(),
            None,
            Observe::default(),
        )
        .await
    }

    /// Continues a run from its last checkpoint in the runtime's store: after its process died,
    /// or after it was cancelled. Nothing checkpointed is done again: a step whose checkpoint was
    /// saved is not repeated, and tool calls that were in flight are issued again with the same
    /// call ids, so [`ToolCtx::idempotency_key`](agentry_core::ToolCtx::idempotency_key) is the
    /// same both times and tools with side effects can de-duplicate.
    ///
    /// The run is claimed first, and only when no live process drives it: while another process
    /// holds its lease (it renews it as long as it drives the run), the resume gets
    /// [`StoreError::Leased`](agentry_core::StoreError::Leased) and does nothing; a process that
    /// died leaves its lease to expire after [`lease_ttl`](Self::lease_ttl). When several
    /// processes resume it at once, exactly one goes on and the others get `Leased` or
    /// [`StoreError::Conflict`](agentry_core::StoreError::Conflict).
    pub async fn resume<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
    ) -> Result<RunOutput<S, O>, Error> {
        self.resume_observed(agent, run_id, Observe::default())
            .await
    }

    /// [`resume`](Self::resume), started in a tokio task: the handle streams the continued run's
    /// events and cancels it. A run that cannot be resumed ends the stream at once, and its
    /// error comes from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start_resume<S: AgentState, O: DeserializeOwned + Send + 'static>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
    ) -> RunHandle<S, O> {
        let (runtime, agent, id) = (self.clone(), agent.clone(), run_id.to_owned());
        RunHandle::spawn(run_id.to_owned(), move |observe| async move {
            runtime.resume_observed(&agent, &id, observe).await
        })
    }

    async fn resume_observed<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = self.load_run(run_id).await?;
        if let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop {
            return Err(resume_error(
                run_id,
                format!(
                    "it waits for approval of {}; continue it with `Runtime::decide` and a decision for each",
                    call_list(pending.iter())
                ),
            ));
        }
        let snapshot = stored.snapshot.clone();
        self.continue_run(
            agent,
            snapshot,
            Some(&stored),
            HashMap::new(),
            None,
            observe,
        )
        .await
    }

    /// Continues a run that paused for approval, with a decision for each pending call (approve,
    /// reject with a reason the model sees, or reject and stop the run), in this process or any
    /// other that opens the same store.
    ///
    /// A run that is not waiting, an unknown run or call, a call decided twice and a pending call
    /// left undecided are errors that change nothing.
    pub async fn decide<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> Result<RunOutput<S, O>, Error> {
        self.decide_observed(agent, run_id, decisions, Observe::default())
            .await
    }

    /// [`decide`](Self::decide), started in a tokio task: the handle streams the continued run's
    /// events and cancels it. Decisions that do not fit the run end the stream at once, and the
    /// error comes from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start_decide<S: AgentState, O: DeserializeOwned + Send + 'static>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> RunHandle<S, O> {
        let (runtime, agent, id) = (self.clone(), agent.clone(), run_id.to_owned());
        let decisions: Vec<Decision> = decisions.into_iter().collect();
        RunHandle::spawn(run_id.to_owned(), move |observe| async move {
            runtime
                .decide_observed(&agent, &id, decisions, observe)
                .await
        })
    }

    async fn decide_observed<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
        decisions: impl IntoIterator<Item = Decision>,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let stored = self.load_run(run_id).await?;
        let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop else {
            return Err(resume_error(
                run_id,
                format!(
                    "it is not waiting for approval (it is {})",
                    stored.snapshot.status()
                ),
            ));
        };
        let decisions = check_decisions(run_id, pending, decisions)?;
        let pending = pending.clone();
        let mut snapshot = stored.snapshot.clone();
        snapshot.stop = None;
        self.continue_run(
            agent,
            snapshot,
            Some(&stored),
            decisions,
            Some(pending),
            observe,
        )
        .await
    }

    /// Loads a run from the store, or says why it cannot.
    async fn load_run(&self, run_id: &str) -> Result<agentry_core::StoredRun, Error> {
        let store = self.inner.store.as_ref().ok_or_else(|| {
            resume_error(
                run_id,
                "this runtime has no store; paused and interrupted runs continue from one: configure it with `Runtime::store(..)` (`MemoryStore` within one process, `SqliteStore` or `PostgresStore` from agentry-store across processes)",
            )
        })?;
        store
            .load(run_id)
            .await?
            .ok_or_else(|| resume_error(run_id, "the store has no run with this id"))
    }

    /// Checks a snapshot against the agent, claims the run (when `stored`, as loaded) and drives
    /// it on.
    async fn continue_run<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
        stored: Option<&StoredRun>,
        decisions: HashMap<String, Decision>,
        paused: Option<Vec<PendingApproval>>,
        observe: Observe,
    ) -> Result<RunOutput<S, O>, Error> {
        let run_id = snapshot.run_id.clone();
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(resume_error(
                &run_id,
                format!(
                    "its format version is {}, this build reads {SNAPSHOT_VERSION}",
                    snapshot.version
                ),
            ));
        }
        if snapshot.agent != *agent.name() {
            return Err(resume_error(
                &run_id,
                format!(
                    "it belongs to agent `{}`, not `{}`; resume it with the agent that started it",
                    snapshot.agent,
                    agent.name()
                ),
            ));
        }
        match &snapshot.stop {
            None | Some(StopReason::Cancelled) => {}
            Some(StopReason::AwaitingApproval { pending }) => {
                return Err(resume_error(
                    &run_id,
                    format!(
                        "it waits for approval of {}; continue it with `Runtime::decide`",
                        call_list(pending.iter())
                    ),
                ));
            }
            Some(stop) => return Err(resume_error(&run_id, format!("it already ended ({stop})"))),
        }
        let def = agent.def();
        let state = def.initial_state.parse_json(snapshot.state.clone())?;
        let scope = self
            .restore_scope(&snapshot.hooks)
            .map_err(|e| resume_error(&run_id, e.to_string()))?;
        let options = RunOptions {
            run_id: Some(run_id.clone()),
            session_id: snapshot.session_id.clone(),
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
            hooks: scope.hooks,
            stored_hooks: scope.records,
            tool_sources: scope.tool_sources,
        };
        let mut driver = self.driver(def, options, observe.events, observe.cancel)?;
        if let (Some(store), Some(stored)) = (&self.inner.store, stored) {
            let status = stored.snapshot.status();
            driver.lease = store
                .claim(&run_id, stored.lease, status, self.inner.lease_ttl)
                .await?;
            // The log holds the stored history; what the snapshot differs by is written at the
            // first checkpoint, which follows the stored revision. (A run stored before
            // histories were logged writes it whole.)
            driver.log = MessageLog::of_stored(stored);
        }
        driver.scope.ctx.take_state(state);
        driver.machine = RunMachine::restore(&snapshot);
        driver.scope.ctx.set_step(snapshot.step);
        driver.decisions = decisions;
        driver.last_paused = paused;
        typed(drive(driver, Start::Resume).await?)
    }

    /// Builds a run's hooks and tool sources that are data again from their records, with this
    /// runtime's restorers ([`restores`](Self::restores), [`restores_tools`](Self::restores_tools)):
    /// what a resumed run, or a run driven elsewhere ([`effects`](Self::effects)), uses.
    ///
    /// # Errors
    /// A record of a kind this runtime was not told how to build, or whose spec does not build:
    /// the error says which, and what to do.
    pub fn restore_scope(&self, records: &[HookSpecRecord]) -> Result<effects::StoredScope, Error> {
        let mut scope = effects::StoredScope {
            records: records.to_vec(),
            ..Default::default()
        };
        for stored in records {
            let Some(build) = self.inner.restorers.get(stored.kind.as_str()) else {
                return Err(Error::other(format!(
                    "it has a stored hook of kind `{}`, which this runtime cannot build again; tell it how with `Runtime::restores::<..>()` (for command hooks, `Runtime::restores::<agentry_external::CommandHooks>()`; for MCP servers, `Runtime::restores_tools::<agentry_mcp::McpServers>()`)",
                    stored.kind
                )));
            };
            let restored = build(&stored.spec).map_err(|e| {
                Error::other(format!(
                    "its stored hook of kind `{}` cannot be built again: {e}",
                    stored.kind
                ))
            })?;
            match restored {
                Restored::Hook(hook) => {
                    scope.hooks.add(hook);
                }
                Restored::Tools(source) => scope.tool_sources.push(source),
            }
        }
        Ok(scope)
    }

    fn driver(
        &self,
        def: &Arc<AgentDef>,
        options: RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: Option<CancellationToken>,
    ) -> Result<Box<Driver>, Error> {
        self.driver_under(def, options, events, cancel, None)
    }

    /// [`driver`](Self::driver), for a sub-agent's run when `nested` says where it sits (and its
    /// parent run's id): the ancestors' hooks wrap its own, and its agent path, root run and depth
    /// are theirs.
    pub(crate) fn driver_under(
        &self,
        def: &Arc<AgentDef>,
        options: RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: Option<CancellationToken>,
        nested: Option<(effects::Lineage<'_>, Option<String>)>,
    ) -> Result<Box<Driver>, Error> {
        // The order of an in-process run's, and of its sub-agents': the runtime's hooks, then
        // the live ones, the root agent's, the run's, and each sub-agent's down to this one.
        let live = self.inner.live.snapshot();
        let empty = Hooks::new();
        let live = live.as_deref().unwrap_or(&empty);
        let hooks = match &nested {
            Some((lineage, _)) if !lineage.ancestors.is_empty() => {
                let (root, below) = lineage.ancestors.split_first().expect("not empty");
                let mut scopes = vec![live, &root.hooks, &options.hooks];
                scopes.extend(below.iter().map(|a| &a.hooks));
                scopes.push(&def.hooks);
                scoped_hooks(&self.inner.hooks, &scopes)
            }
            // A run of its own (the common case): no list to allocate.
            _ => scoped_hooks(&self.inner.hooks, &[live, &def.hooks, &options.hooks]),
        };
        let depth = match (&nested, nesting::enclosing()) {
            (Some((lineage, _)), _) => lineage.ancestors.len() as u32,
            (None, Some(parent)) => nesting::nested_depth(&parent, self.inner.limits.max_depth)?,
            (None, None) => 0,
        };
        let run_id = options.run_id.unwrap_or_else(new_run_id);
        let (parent_run_id, agent_path, root_run_id) = match &nested {
            Some((lineage, parent)) => {
                let path: Vec<&str> = lineage
                    .ancestors
                    .iter()
                    .chain(std::iter::once(def))
                    .map(|a| &*a.name)
                    .collect();
                let path: Arc<str> = path.join("/").into();
                (parent.clone(), path, lineage.root_run_id.to_string())
            }
            None => (None, def.name.clone(), run_id.clone()),
        };
        let spec = RunContextSpec {
            run_id: run_id.clone(),
            parent_run_id,
            agent_name: def.name.clone(),
            agent_path,
            info: Arc::new(RunInfo {
                session_id: options.session_id,
                user_id: options.user_id,
                tags: options.tags,
                metadata: options.metadata,
                root_run_id: Some(root_run_id),
            }),
            cancel: cancel.unwrap_or_default(),
            state: def.initial_state.clone_box(),
            observe_state: false,
            events,
            step: 0,
            redactor: self.inner.redactor.clone(),
            record_events: self.inner.store.is_some(),
            hook_timeout: self.inner.limits.hook_timeout,
            depth,
        };
        let mut driver = Driver::new(def, &self.inner, hooks, spec)?;
        driver.stored_hooks = options.stored_hooks;
        driver.tool_sources = options.tool_sources;
        Ok(driver)
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
