//! The in-process runtime: runs agents on tokio.

mod compact;
mod driver;
mod handle;
mod model_call;
mod scope;
mod sub_agent;
mod tool_call;

pub use handle::RunHandle;

use agentry_core::hooks::{Hooks, IntoHook};
use agentry_core::{
    Agent, AgentDef, AgentState, Error, Model, Redact, RunContextSpec, RunEvent, RunInfo,
    RunMachine, RunOptions, RunOutput, RunSnapshot, RunStore, SNAPSHOT_VERSION, StateError,
    StopReason,
};
use driver::{Driver, Finished, Start, scoped_hooks};
use futures::channel::mpsc::{UnboundedSender, unbounded};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
pub(crate) struct RuntimeInner {
    hooks: Arc<Hooks>,
    default_model: Option<Arc<dyn Model>>,
    store: Option<Arc<dyn RunStore>>,
    redactor: Option<Arc<dyn Redact>>,
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

    /// Masks secrets in everything runs report: their event streams and histories, and what
    /// hooks record through [`HookCtx::redact`](agentry_core::RunContext::redact) (the built-in
    /// telemetry and recorder do). What the model and the tools receive is not changed; see
    /// [`Redactor`](crate::builtins::Redactor) for masking those too.
    pub fn redact(mut self, redactor: impl Redact) -> Self {
        Arc::make_mut(&mut self.inner).redactor = Some(Arc::new(redactor));
        self
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
        let driver = self.driver(agent.def(), options, None, None)?;
        typed(driver.drive(Start::New(input.into())).await?)
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
    /// the same agent definition. A run that ended can only be resumed if it was cancelled.
    pub async fn resume<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        snapshot: RunSnapshot,
    ) -> Result<RunOutput<S, O>, Error> {
        let fail = |message: String| Error::Resume {
            run_id: snapshot.run_id.clone(),
            message,
        };
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(fail(format!(
                "its format version is {}, this build reads {SNAPSHOT_VERSION}",
                snapshot.version
            )));
        }
        if snapshot.agent != *agent.name() {
            return Err(fail(format!(
                "it belongs to agent `{}`, not `{}`; resume it with the agent that started it",
                snapshot.agent,
                agent.name()
            )));
        }
        if let Some(stop) = snapshot
            .stop
            .as_ref()
            .filter(|s| **s != StopReason::Cancelled)
        {
            return Err(fail(format!("it already ended ({stop})")));
        }
        let def = agent.def();
        let state = def.initial_state.parse_json(snapshot.state.clone())?;
        let options = RunOptions {
            run_id: Some(snapshot.run_id.clone()),
            session_id: snapshot.session_id.clone(),
            user_id: snapshot.user_id.clone(),
            tags: snapshot.tags.clone(),
            metadata: snapshot.metadata.clone(),
            hooks: Hooks::new(),
        };
        let mut driver = self.driver(def, options, None, None)?;
        if let Some(store) = &self.inner.store
            && let Some(stored) = store.load(&snapshot.run_id).await?
        {
            driver.lease = store.claim(&snapshot.run_id, stored.lease).await?;
        }
        driver.scope.ctx.take_state(state);
        driver.machine = RunMachine::restore(&snapshot);
        driver.scope.ctx.set_step(snapshot.step);
        typed(driver.drive(Start::Resume).await?)
    }

    /// Continues a run from its last checkpoint in the runtime's store.
    pub async fn resume_run<S: AgentState, O: DeserializeOwned>(
        &self,
        agent: &Agent<S, O>,
        run_id: &str,
    ) -> Result<RunOutput<S, O>, Error> {
        let store = self.inner.store.as_ref().ok_or_else(|| Error::Resume {
            run_id: run_id.to_string(),
            message: "this runtime has no store; configure one with `Runtime::store(..)`".into(),
        })?;
        let snapshot = store
            .load(run_id)
            .await?
            .ok_or_else(|| Error::Resume {
                run_id: run_id.to_string(),
                message: "the store has no run with this id".into(),
            })?
            .snapshot;
        self.resume(agent, snapshot).await
    }

    fn driver(
        &self,
        def: &Arc<AgentDef>,
        options: RunOptions,
        events: Option<UnboundedSender<RunEvent>>,
        cancel: Option<CancellationToken>,
    ) -> Result<Driver, Error> {
        let hooks = scoped_hooks(&self.inner.hooks, &[&def.hooks, &options.hooks]);
        let spec = RunContextSpec {
            run_id: options.run_id.unwrap_or_else(new_run_id),
            parent_run_id: None,
            agent_name: def.name.clone(),
            agent_path: def.name.clone(),
            info: Arc::new(RunInfo {
                session_id: options.session_id,
                user_id: options.user_id,
                tags: options.tags,
                metadata: options.metadata,
            }),
            cancel: cancel.unwrap_or_default(),
            state: def.initial_state.clone_box(),
            observe_state: false,
            events,
            step: 0,
            redactor: self.inner.redactor.clone(),
        };
        Driver::new(def, &self.inner, hooks, spec)
    }
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
        steps: done.machine.step,
        model_calls: done.machine.model_calls,
        stop: done.stop,
    })
}
