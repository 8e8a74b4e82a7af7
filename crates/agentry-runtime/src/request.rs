//! A run to do: what [`Runtime::run`], [`Runtime::resume`] and [`Runtime::decide`] return. Await
//! it for the run's output, or [`start`](RunRequest::start) it on a task for its events.

use super::driver::Start;
use super::handle::Observe;
use super::{RunHandle, Runtime, drive, new_run_id, typed};
use agentry_core::fork::Fork;
use agentry_core::{
    Agent, AgentState, Content, Decision, Error, RunOptions, RunOutput, RunSnapshot,
};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use std::future::IntoFuture;

/// A new run of an agent ([`Runtime::run`]): await it for its output, or
/// [`start`](Self::start) it for a handle that streams its events.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentry::Error> {
/// use agentry::prelude::*;
/// use agentry::RunOptions;
///
/// let model = ScriptedModel::new().text("Hello!").text("Hello!");
/// let agent = Agent::builder("greeter").model(model).build()?;
/// let runtime = Runtime::new();
/// let out = runtime.run(&agent, "Hi").await?;
/// assert_eq!(out.output.as_deref(), Some("Hello!"));
///
/// let mut run = runtime.run(&agent, "Hi").with(RunOptions::new().session("s-1")).start();
/// while let Some(event) = run.events().next().await {
///     let _ = event.kind();
/// }
/// assert_eq!(run.result().await?.output.as_deref(), Some("Hello!"));
/// # Ok(()) }
/// ```
#[must_use = "a run request does nothing until it is awaited or started"]
pub struct RunRequest<'a, S, O> {
    runtime: &'a Runtime,
    agent: &'a Agent<S, O>,
    input: Content,
    options: RunOptions,
}

/// Where a stored run goes on from ([`Runtime::resume`]): its id in the runtime's store, or a
/// snapshot (a checkpoint you kept yourself).
#[derive(Clone, Debug)]
pub enum ResumeFrom {
    /// The run's last checkpoint in the runtime's store.
    Stored(String),
    /// This snapshot.
    Snapshot(Box<RunSnapshot>),
}

impl From<&str> for ResumeFrom {
    fn from(run_id: &str) -> Self {
        ResumeFrom::Stored(run_id.to_owned())
    }
}

impl From<&String> for ResumeFrom {
    fn from(run_id: &String) -> Self {
        ResumeFrom::Stored(run_id.clone())
    }
}

impl From<String> for ResumeFrom {
    fn from(run_id: String) -> Self {
        ResumeFrom::Stored(run_id)
    }
}

impl From<RunSnapshot> for ResumeFrom {
    fn from(snapshot: RunSnapshot) -> Self {
        ResumeFrom::Snapshot(Box::new(snapshot))
    }
}

/// A stored run going on ([`Runtime::resume`], [`Runtime::decide`]): await it for its output, or
/// [`start`](Self::start) it for a handle that streams its events. It runs with the options it
/// started with.
#[must_use = "a run request does nothing until it is awaited or started"]
pub struct ResumeRequest<'a, S, O> {
    runtime: &'a Runtime,
    agent: &'a Agent<S, O>,
    how: GoOn,
}

/// How a stored run goes on.
enum GoOn {
    From(ResumeFrom),
    Decided {
        run_id: String,
        decisions: Vec<Decision>,
    },
    Forked {
        from: String,
        run_id: String,
        fork: Fork,
    },
}

impl GoOn {
    fn run_id(&self) -> &str {
        match self {
            GoOn::From(ResumeFrom::Stored(run_id)) | GoOn::Decided { run_id, .. } => run_id,
            GoOn::From(ResumeFrom::Snapshot(snapshot)) => &snapshot.run_id,
            GoOn::Forked { run_id, .. } => run_id,
        }
    }
}

impl Runtime {
    /// A new run of `agent` on `input` (text, or parts: `[Part::text("What is this?"),
    /// Part::read("photo.png")?]`): await it for the run's output, add options with
    /// [`RunRequest::with`], or [`start`](RunRequest::start) it on a task for its events.
    pub fn run<'a, S, O>(
        &'a self,
        agent: &'a Agent<S, O>,
        input: impl Into<Content>,
    ) -> RunRequest<'a, S, O> {
        RunRequest {
            runtime: self,
            agent,
            input: input.into(),
            options: RunOptions::new(),
        }
    }

    /// A stored run going on from `from` (its id in this runtime's store, or a
    /// [`RunSnapshot`]): after its process died, or after it was cancelled. Nothing
    /// checkpointed is done again: a step whose checkpoint was saved is not repeated, and tool
    /// calls that were in flight are issued again with the same call ids, so
    /// [`ToolCtx::idempotency_key`](agentry_core::ToolCtx::idempotency_key) is the same both
    /// times and tools with side effects can de-duplicate. A run that paused for approval goes
    /// on with [`decide`](Self::decide); one that ended can only go on if it was cancelled.
    ///
    /// A stored run is claimed first, and only when no live process drives it: while another
    /// process holds its lease (it renews it as long as it drives the run), the resume gets
    /// [`StoreError::Leased`](agentry_core::StoreError::Leased) and does nothing; a process that
    /// died leaves its lease to expire after [`lease_ttl`](Self::lease_ttl). When several
    /// processes resume it at once, exactly one goes on and the others get `Leased` or
    /// [`StoreError::Conflict`](agentry_core::StoreError::Conflict).
    pub fn resume<'a, S, O>(
        &'a self,
        agent: &'a Agent<S, O>,
        from: impl Into<ResumeFrom>,
    ) -> ResumeRequest<'a, S, O> {
        ResumeRequest {
            runtime: self,
            agent,
            how: GoOn::From(from.into()),
        }
    }

    /// A run that paused for approval going on, with a decision for each pending call (approve,
    /// reject with a reason the model sees, or reject and stop the run), in this process or any
    /// other that opens the same store.
    ///
    /// A run that is not waiting, an unknown run or call, a call decided twice and a pending call
    /// left undecided are errors that change nothing.
    pub fn decide<'a, S, O>(
        &'a self,
        agent: &'a Agent<S, O>,
        run_id: impl Into<String>,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> ResumeRequest<'a, S, O> {
        ResumeRequest {
            runtime: self,
            agent,
            how: GoOn::Decided {
                run_id: run_id.into(),
                decisions: decisions.into_iter().collect(),
            },
        }
    }

    /// A new run of `agent` that starts where stored run `from` stood at the end of a step,
    /// with its history and state as they were then, or with the input or state `fork` gives
    /// instead ("what if the model had been told this?"). The stored run is left as it is; the
    /// fork is a run of its own in the same store (its id is [`RunHandle::run_id`] once
    /// started), whose metadata names where it came from (`forked_from`, `forked_at_step`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), agentry::Error> {
    /// use agentry::prelude::*;
    /// use agentry::{Fork, MemoryStore};
    ///
    /// let model = ScriptedModel::new().text("Paris.").text("Lyon, then.");
    /// let agent = Agent::builder("guide").model(model).build()?;
    /// let runtime = Runtime::new().store(MemoryStore::new());
    /// let first = runtime.run(&agent, "Where should I go in France?").await?;
    ///
    /// // Back to the start, asked something else.
    /// let fork = Fork::at(0).input("Where should I go in France, not Paris?");
    /// let forked = runtime.fork(&agent, &first.run_id, fork).await?;
    /// assert_eq!(forked.output.as_deref(), Some("Lyon, then."));
    /// assert_ne!(forked.run_id, first.run_id);
    /// # Ok(()) }
    /// ```
    pub fn fork<'a, S, O>(
        &'a self,
        agent: &'a Agent<S, O>,
        from: impl Into<String>,
        fork: Fork,
    ) -> ResumeRequest<'a, S, O> {
        ResumeRequest {
            runtime: self,
            agent,
            how: GoOn::Forked {
                from: from.into(),
                run_id: new_run_id(),
                fork,
            },
        }
    }
}

impl<'a, S: AgentState, O: DeserializeOwned> RunRequest<'a, S, O> {
    /// Runs with `options`: its ids, tags and metadata, hooks and tool sources for this run only.
    pub fn with(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// Starts the run in a tokio task and returns a handle that streams its events, cancels it
    /// and gives its result. Definition errors (such as [`Error::NoModel`]) surface from
    /// [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start(self) -> RunHandle<S, O>
    where
        O: Send + 'static,
    {
        let run_id = self.options.run_id.clone().unwrap_or_else(new_run_id);
        let options = RunOptions {
            run_id: Some(run_id.clone()),
            ..self.options
        };
        let (runtime, def, input) = (self.runtime, self.agent.def(), self.input);
        RunHandle::spawn(run_id, move |observe| {
            let driver = runtime
                .driver(def, options, observe.events, observe.cancel)
                .map(|mut d| {
                    d.watched_by(observe.leave, observe.stored);
                    d
                });
            async move { typed(driver?.drive(Start::New(input)).await?) }
        })
    }
}

impl<'a, S: AgentState, O: DeserializeOwned + 'a> IntoFuture for RunRequest<'a, S, O> {
    type Output = Result<RunOutput<S, O>, Error>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            // No named driver: it moves into `drive`, and a moved-out local would keep its own
            // slot in this future.
            typed(
                drive(
                    self.runtime
                        .driver(self.agent.def(), self.options, None, None)?,
                    Start::New(self.input),
                )
                .await?,
            )
        })
    }
}

impl<'a, S: AgentState, O: DeserializeOwned> ResumeRequest<'a, S, O> {
    /// Starts the run going on in a tokio task and returns a handle that streams its events,
    /// cancels it and gives its result. A run that cannot go on ends the stream at once, and the
    /// error comes from [`RunHandle::result`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (it spawns the run).
    pub fn start(self) -> RunHandle<S, O>
    where
        O: Send + 'static,
    {
        let (runtime, agent) = (self.runtime.clone(), self.agent.clone());
        let run_id = self.how.run_id().to_owned();
        let how = self.how;
        RunHandle::spawn(run_id, move |observe| async move {
            go_on(&runtime, &agent, how, observe).await
        })
    }
}

impl<'a, S: AgentState, O: DeserializeOwned + 'a> IntoFuture for ResumeRequest<'a, S, O> {
    type Output = Result<RunOutput<S, O>, Error>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(go_on(
            self.runtime,
            self.agent,
            self.how,
            Observe::default(),
        ))
    }
}

async fn go_on<S: AgentState, O: DeserializeOwned>(
    runtime: &Runtime,
    agent: &Agent<S, O>,
    how: GoOn,
    observe: Observe,
) -> Result<RunOutput<S, O>, Error> {
    match how {
        GoOn::From(ResumeFrom::Stored(run_id)) => {
            runtime.resume_stored(agent, &run_id, observe).await
        }
        GoOn::From(ResumeFrom::Snapshot(snapshot)) => {
            runtime.resume_snapshot(agent, *snapshot, observe).await
        }
        GoOn::Decided { run_id, decisions } => {
            runtime.decided(agent, &run_id, decisions, observe).await
        }
        GoOn::Forked { from, run_id, fork } => {
            runtime.forked(agent, &from, run_id, &fork, observe).await
        }
    }
}
