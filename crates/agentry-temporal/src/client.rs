//! The client: starts runs by agent name, awaits their results, cancels them, decides their
//! pending calls and lists them.

use crate::TemporalError;
use crate::connect::Server;
use crate::reading::Reader;
use crate::wire::{
    DecideRequest, Limits, PENDING_MEMO, Placement, RunResult, WorkflowInput,
    default_continue_after,
};
use crate::wording;
use crate::workflow::{AgentRun, WORKFLOW_TYPE};
use agentry_core::{Decision, PendingApproval, RunEvent, RunOptions, RunOutput};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use temporalio_client::errors::{WorkflowGetResultError, WorkflowUpdateError};
use temporalio_client::{
    WorkflowCancelOptions, WorkflowDescribeOptions, WorkflowExecuteUpdateOptions,
    WorkflowExecutionStatus, WorkflowGetResultOptions, WorkflowHandle, WorkflowListOptions,
    WorkflowQueryOptions, WorkflowStartOptions,
};
use temporalio_common::protos::temporal::api::enums::v1::{TaskQueueKind, TaskQueueType};
use temporalio_common::protos::temporal::api::taskqueue::v1::TaskQueue;
use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeTaskQueueRequest;

/// The most media bytes a run's input carries to Temporal inline: well under the server's
/// default 2 MB payload limit once base64 and the rest of the workflow's input are added.
pub const MAX_INLINE_MEDIA: u64 = 1024 * 1024;

/// How long [`Client::run`]'s start waits to see a worker poll the task queue, by default.
pub const DEFAULT_WORKER_WAIT: Duration = Duration::from_secs(5);
/// How long [`RunHandle::decide`] waits for a worker to take decisions up, by default.
pub const DEFAULT_DECISION_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait between two looks for a pause while [`RunHandle::result`] waits, by default.
pub const DEFAULT_PAUSE_CHECK: Duration = Duration::from_secs(10);
/// How long a worker seen polling counts as there, before the next start asks again.
const WORKERS_SEEN_FOR: Duration = Duration::from_secs(30);

/// A client of the runs on one Temporal server's task queue. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: temporalio_client::Client,
    server: Server,
    limits: Limits,
    placement: Placement,
    continue_after: u32,
    worker_wait: Duration,
    decision_timeout: Duration,
    pause_check: Duration,
    /// When a worker was last seen polling the task queue.
    workers_seen: Arc<Mutex<Option<Instant>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server)
            .field("limits", &self.limits)
            .field("placement", &self.placement)
            .field("continue_after", &self.continue_after)
            .field("worker_wait", &self.worker_wait)
            .field("decision_timeout", &self.decision_timeout)
            .finish()
    }
}

/// One run as [`Client::list`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// The run id.
    pub run_id: String,
    /// Where it stands.
    pub status: RunState,
}

/// Where a run on Temporal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunState {
    /// Under way, or waiting for a decision.
    Running,
    /// It ended: with an answer, another stop reason (cancellation included), or an error the
    /// result tells.
    Ended,
    /// Its workflow was terminated, timed out or ended some other way, without a result.
    Other,
}

impl Client {
    /// Connects to `server`.
    pub async fn connect(server: Server) -> Result<Client, TemporalError> {
        Ok(Client {
            inner: server.connect().await?,
            server,
            limits: Limits::default(),
            placement: Placement::default(),
            continue_after: default_continue_after(),
            worker_wait: DEFAULT_WORKER_WAIT,
            decision_timeout: DEFAULT_DECISION_TIMEOUT,
            pause_check: DEFAULT_PAUSE_CHECK,
            workers_seen: Arc::default(),
        })
    }

    /// How long starting a run waits to see a worker poll the task queue before it fails with
    /// [`TemporalError::NoWorker`] ([`DEFAULT_WORKER_WAIT`] by default), so a client pointed at
    /// a task queue no worker polls says so instead of waiting forever. A worker seen counts
    /// for 30 s; the server remembers pollers for minutes, so workers that come and go still
    /// count. `Duration::ZERO` starts runs without asking (to queue them before any worker is
    /// up).
    pub fn worker_wait(mut self, wait: Duration) -> Self {
        self.worker_wait = wait;
        self
    }

    /// How long [`RunHandle::decide`] waits for a worker to take decisions up
    /// ([`DEFAULT_DECISION_TIMEOUT`] by default) before it fails with
    /// [`TemporalError::DecisionsNotTaken`]; decisions no worker took up in time are never
    /// applied later.
    pub fn decision_timeout(mut self, timeout: Duration) -> Self {
        self.decision_timeout = timeout;
        self
    }

    /// How often, at most, [`RunHandle::result`] looks whether its run paused for a person
    /// ([`DEFAULT_PAUSE_CHECK`] by default): it looks after 1 s, then twice as long each time up
    /// to this. Each look is one request to the server; thousands of results waiting at once on
    /// a busy server are cheaper with a longer one, a caller that wants to hear of a pause sooner
    /// sets a shorter one (or follows [`RunHandle::events`], which tells a pause at once).
    pub fn pause_check(mut self, every: Duration) -> Self {
        self.pause_check = every.max(Duration::from_millis(100));
        self
    }

    /// Waits (up to [`worker_wait`](Self::worker_wait)) to see a worker poll the task queue.
    async fn check_workers(&self, run_id: &str) -> Result<(), TemporalError> {
        if self.worker_wait.is_zero() {
            return Ok(());
        }
        let seen = *self.workers_seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.is_some_and(|at| at.elapsed() < WORKERS_SEEN_FOR) {
            return Ok(());
        }
        let deadline = Instant::now() + self.worker_wait;
        loop {
            let request = DescribeTaskQueueRequest {
                namespace: self.server.namespace.clone(),
                task_queue: Some(TaskQueue {
                    name: self.server.task_queue.clone(),
                    kind: TaskQueueKind::Normal as i32,
                    ..Default::default()
                }),
                task_queue_type: TaskQueueType::Workflow as i32,
                ..Default::default()
            };
            let answer = self
                .inner
                .connection()
                .workflow_service()
                .describe_task_queue(temporalio_client::tonic::Request::new(request))
                .await;
            match answer {
                Ok(answer) if !answer.get_ref().pollers.is_empty() => {
                    *self.workers_seen.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(Instant::now());
                    return Ok(());
                }
                Ok(_) => {}
                Err(status) => {
                    // A server that will not say (an older one, a narrow permission) is not
                    // a reason to refuse the run.
                    tracing::debug!(error = %wording::status(&status), "the task queue's pollers could not be read");
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(TemporalError::NoWorker {
                    run_id: run_id.to_string(),
                    task_queue: self.server.task_queue.clone(),
                    namespace: self.server.namespace.clone(),
                    waited: self.worker_wait,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The activity time limits of the runs this client starts from now on.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where the activities of the runs this client starts from now on run: scheduled on any
    /// worker (the default), or as local activities on the workflow's worker for the
    /// hooks-only phases or for every phase (see [`Placement`]).
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// How many events a run's workflow history may reach before the run continues as a new
    /// execution (10,000 by default), for the runs this client starts from now on. The run
    /// keeps its id, history, state and counts across it; its handles follow it. Temporal
    /// warns at 10,240 events and fails a workflow at 51,200.
    pub fn continue_as_new_after(mut self, events: u32) -> Self {
        self.continue_after = events;
        self
    }

    /// A run of the agent a worker hosts as `agent` on `input`, as a request: await it for the
    /// run's result, or [`start`](RunRequest::start) it for a [`RunHandle`];
    /// [`with`](RunRequest::with) gives it options. The same shape as the in-process
    /// `Runtime::run`. The result is a text agent's (`RunOutput<(), String>`) unless
    /// [`typed`](RunRequest::typed) says otherwise.
    pub fn run(&self, agent: &str, input: impl Into<agentry_core::Content>) -> RunRequest<'_> {
        RunRequest::of(
            self,
            Origin::New {
                agent: agent.to_string(),
                input: input.into(),
            },
        )
    }

    /// Starts a run (see [`RunRequest::start`]).
    async fn start(
        &self,
        agent: String,
        input: agentry_core::Content,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        // Each stored hook or source is one registration and one record.
        if options.hooks.len() + options.tool_sources.len() != options.stored_hooks.len() {
            return Err(TemporalError::Options(
                "runs on Temporal take run-scope hooks and tool sources only when they are data (`RunOptions::with_stored`, `with_stored_tools`): the worker runs the run, so register closures on the worker's runtime or on the agent".into(),
            ));
        }
        let inline: u64 = input.blobs().map(agentry_core::content::Blob::len).sum();
        if inline > MAX_INLINE_MEDIA {
            return Err(TemporalError::Options(format!(
                "the input carries {} of media bytes; a run on Temporal carries its messages through the workflow's history, whose payloads are capped (2 MB by default), so its media may hold at most {}: give large images and documents by URL (`Part::image_url`, `Media::url`), or run in-process",
                agentry_core::content::human_size(inline),
                agentry_core::content::human_size(MAX_INLINE_MEDIA),
            )));
        }
        let run_id = options
            .run_id
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let request = WorkflowInput {
            agent,
            input,
            session_id: options.session_id,
            user_id: options.user_id,
            tags: options.tags,
            metadata: options.metadata,
            limits: self.limits,
            placement: self.placement,
            continue_after: self.continue_after,
            carried: None,
            forked: None,
            parent: None,
            hooks: options.stored_hooks,
        };
        self.launch(run_id, request).await
    }

    /// The time limits, placement and continue-as-new threshold of the runs this client
    /// starts.
    pub(crate) fn plan_settings(&self) -> (Limits, Placement, u32) {
        (self.limits, self.placement, self.continue_after)
    }

    /// Starts the workflow of run `run_id` on `request`, once a worker polls the task queue.
    pub(crate) async fn launch(
        &self,
        run_id: String,
        request: WorkflowInput,
    ) -> Result<RunHandle, TemporalError> {
        self.check_workers(&run_id).await?;
        let start =
            WorkflowStartOptions::new(self.server.task_queue.clone(), run_id.clone()).build();
        self.inner
            .start_workflow(AgentRun::run, request, start)
            .await
            .map_err(|e| TemporalError::Start {
                run_id: run_id.clone(),
                message: wording::start(&e, &run_id),
            })?;
        Ok(self.handle(&run_id))
    }

    /// A handle on the run `run_id` (started by any client).
    pub fn handle(&self, run_id: &str) -> RunHandle {
        RunHandle {
            run_id: run_id.to_string(),
            handle: self.inner.get_workflow_handle::<AgentRun>(run_id),
            client: self.inner.clone(),
            task_queue: self.server.task_queue.clone(),
            decision_timeout: self.decision_timeout,
            pause_check: self.pause_check,
        }
    }

    /// The runs of this namespace, newest first (as the server's visibility store has them: a
    /// run started a moment ago may take a moment to appear).
    pub async fn list(&self) -> Result<Vec<RunSummary>, TemporalError> {
        let query = format!("WorkflowType = '{WORKFLOW_TYPE}'");
        let mut stream = self
            .inner
            .list_workflows(query, WorkflowListOptions::default());
        let mut runs = Vec::new();
        while let Some(item) = stream.next().await {
            let execution = item.map_err(|e| TemporalError::Interaction {
                run_id: String::new(),
                message: format!("listing runs failed: {}", wording::client(&e)),
            })?;
            let status = match execution.status() {
                // An execution the run continued from: the run is listed by its latest.
                WorkflowExecutionStatus::ContinuedAsNew => continue,
                WorkflowExecutionStatus::Running => RunState::Running,
                WorkflowExecutionStatus::Completed => RunState::Ended,
                _ => RunState::Other,
            };
            runs.push(RunSummary {
                run_id: execution.id().to_string(),
                status,
            });
        }
        Ok(runs)
    }
}

/// How often [`RunHandle::events`] asks the run's workflow for new events.
const EVENTS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// A run on Temporal.
pub struct RunHandle {
    run_id: String,
    handle: WorkflowHandle<temporalio_client::Client, AgentRun>,
    client: temporalio_client::Client,
    task_queue: String,
    decision_timeout: Duration,
    pause_check: Duration,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("run_id", &self.run_id)
            .finish()
    }
}

impl RunHandle {
    /// The run id (its workflow id).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub(crate) fn interaction(&self, message: impl std::fmt::Display) -> TemporalError {
        TemporalError::Interaction {
            run_id: self.run_id.clone(),
            message: message.to_string(),
        }
    }

    /// Waits for the run's end, or its pause for a person, and returns what the in-process
    /// runtime's `run` returns for it: output, state, history, usage, steps and stop reason,
    /// typed as the agent's state `S` and output `O`. A run that waits for a decision returns
    /// with [`StopReason::AwaitingApproval`](agentry_core::StopReason::AwaitingApproval) and
    /// its pending calls (read from the run's workflow, which takes a worker), noticed within
    /// the client's [`pause_check`](Client::pause_check); once decided, `result` waits for what
    /// comes next. A run that failed is [`TemporalError::RunFailed`]
    /// with its error.
    pub async fn result<S: DeserializeOwned, O: DeserializeOwned>(
        &self,
    ) -> Result<RunOutput<S, O>, TemporalError> {
        let ended = self.handle.get_result(WorkflowGetResultOptions::default());
        let result = tokio::select! {
            result = ended => result,
            paused = self.paused() => return self.typed(paused?),
        };
        let result = result.map_err(|e| match e {
            WorkflowGetResultError::Terminated { .. } | WorkflowGetResultError::TimedOut => {
                TemporalError::Ended {
                    run_id: self.run_id.clone(),
                    message: wording::result(&e),
                }
            }
            other => self.interaction(wording::result(&other)),
        })?;
        match result.unwrapped() {
            RunResult::Finished(run) => self.typed(*run),
            RunResult::Failed(error) | RunResult::FailedWithParent(error) => {
                Err(TemporalError::RunFailed {
                    run_id: self.run_id.clone(),
                    error,
                })
            }
            RunResult::Child { .. } => unreachable!("unwrapped"),
        }
    }

    /// Resolves once the run waits for a person, with what its caller gets then: its pending
    /// calls are looked for after 1 s, then less and less often (every
    /// [`pause_check`](Client::pause_check) at most), so a run that ends soon costs no more
    /// than its result.
    async fn paused(&self) -> Result<RunOutput<Value, Value>, TemporalError> {
        let mut every = Duration::from_secs(1).min(self.pause_check);
        loop {
            tokio::time::sleep(every).await;
            every = (every * 2).min(self.pause_check);
            if self.pending().await?.is_empty() {
                continue;
            }
            let asked = self
                .handle
                .query(AgentRun::paused, (), WorkflowQueryOptions::default());
            match asked.await {
                Ok(Some(output)) => return Ok(output),
                // Decided meanwhile: wait on.
                Ok(None) => continue,
                Err(e) => return Err(self.interaction(wording::query(&e))),
            }
        }
    }

    fn typed<S: DeserializeOwned, O: DeserializeOwned>(
        &self,
        run: RunOutput<Value, Value>,
    ) -> Result<RunOutput<S, O>, TemporalError> {
        let type_error = |what, ty, e: serde_json::Error| TemporalError::Type {
            run_id: self.run_id.clone(),
            what,
            ty,
            message: e.to_string(),
        };
        run.try_map(
            |state| {
                serde_json::from_value::<S>(state)
                    .map_err(|e| type_error("state", std::any::type_name::<S>(), e))
            },
            |output| {
                serde_json::from_value::<O>(output)
                    .map_err(|e| type_error("output", std::any::type_name::<O>(), e))
            },
        )
    }

    /// Cancels the run: the effect under way is interrupted, and the run ends with
    /// [`StopReason::Cancelled`](agentry_core::StopReason::Cancelled) after its Stop and RunEnd
    /// hooks (its [`result`](Self::result) says so).
    pub async fn cancel(&self) -> Result<(), TemporalError> {
        self.handle
            .cancel(WorkflowCancelOptions::default())
            .await
            .map_err(|e| self.interaction(wording::interaction(&e)))
    }

    /// The calls waiting for a person's decision (none while the run is not waiting). Read
    /// from what the server keeps of the run's workflow (its memo), so it answers at once
    /// whether workers run or not.
    pub async fn pending(&self) -> Result<Vec<PendingApproval>, TemporalError> {
        let description = self
            .handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|e| self.interaction(wording::interaction(&e)))?;
        if description.status() != WorkflowExecutionStatus::Running {
            return Ok(Vec::new());
        }
        description
            .memo()
            .get::<Vec<PendingApproval>>(PENDING_MEMO)
            .map(Option::unwrap_or_default)
            .map_err(|e| self.interaction(format!("its waiting calls could not be read: {e}")))
    }

    /// The run's events, as the in-process runtime streams them, from its first: read from the
    /// run's workflow (a query) every 100 ms until the run finished or failed, when the stream
    /// ends. Events are recorded in the run's history as its activities complete, so they
    /// arrive a phase at a time; streamed pieces of text and reasoning arrive with their model
    /// step. A sub-agent's events are read from its own run's workflow (a child workflow) while
    /// it runs, so they arrive as they happen too. A run that continued as a new execution keeps
    /// only that execution's events: a stream that falls behind skips the older ones. An error
    /// reading them is the stream's last item.
    pub fn events(&self) -> impl Stream<Item = Result<RunEvent, TemporalError>> + '_ {
        self.events_from(0)
    }

    /// The run as it stood when it last stopped (ended, failed, or paused), read from its
    /// workflow (a query, which takes a worker); `None` while it has not stopped.
    pub(crate) async fn stopped(&self) -> Result<Option<agentry_core::RunSnapshot>, TemporalError> {
        self.handle
            .query(AgentRun::stopped, (), WorkflowQueryOptions::default())
            .await
            .map_err(|e| self.interaction(wording::query(&e)))
    }

    /// The run's own recorded events of its current execution, from the first it keeps, with
    /// the position of that first (0 unless the run continued as a new execution).
    pub(crate) async fn own_events(&self) -> Result<crate::wire::EventPage, TemporalError> {
        self.handle
            .query(AgentRun::events, 0, WorkflowQueryOptions::default())
            .await
            .map_err(|e| self.interaction(wording::query(&e)))
    }

    /// How many events the run has recorded so far: where [`events_from`](Self::events_from)
    /// starts to show only what comes next.
    pub async fn event_count(&self) -> Result<usize, TemporalError> {
        let page = self
            .handle
            .query(
                AgentRun::events,
                usize::MAX,
                WorkflowQueryOptions::default(),
            )
            .await
            .map_err(|e| self.interaction(wording::query(&e)))?;
        Ok(page.from)
    }

    /// [`events`](Self::events) from position `from` on (the first event is at 0).
    pub fn events_from(
        &self,
        from: usize,
    ) -> impl Stream<Item = Result<RunEvent, TemporalError>> + '_ {
        let start = (Reader::new(&self.run_id, from), true);
        futures::stream::unfold(start, move |(mut reader, first)| async move {
            let mut first = first;
            loop {
                if let Some(event) = reader.pop() {
                    return Some((Ok(event), (reader, first)));
                }
                if reader.done() {
                    return None;
                }
                if !first {
                    tokio::time::sleep(EVENTS_EVERY).await;
                }
                first = false;
                match self
                    .handle
                    .query(
                        AgentRun::events,
                        reader.next(),
                        WorkflowQueryOptions::default(),
                    )
                    .await
                {
                    Ok(page) => reader.run_page(page),
                    Err(e) => {
                        // An error reading them is the stream's last item.
                        reader.end();
                        let e = self.interaction(wording::query(&e));
                        return Some((Err(e), (reader, false)));
                    }
                }
                // The sub-agents' runs under way, read from their own workflows: a child not
                // started yet, or gone, is read again next time.
                for (run_id, next) in reader.followed() {
                    let child = self.client.get_workflow_handle::<AgentRun>(&run_id);
                    if let Ok(page) = child
                        .query(AgentRun::events, next, WorkflowQueryOptions::default())
                        .await
                    {
                        reader.sub_run_page(&run_id, page);
                    }
                }
            }
        })
    }

    /// Decides the waiting calls, one decision each, and the run goes on with them (on whichever
    /// worker picks it up). Decisions that do not fit (a call that does not wait, one decided
    /// twice, one left out) are refused with [`TemporalError::Decisions`], changing nothing.
    ///
    /// A worker takes the decisions up (a Temporal update); with none running, this waits
    /// the client's [`decision_timeout`](Client::decision_timeout) and fails with
    /// [`TemporalError::DecisionsNotTaken`]. Such decisions are never applied: a worker that
    /// starts later refuses them (by the server's clock, so keep clocks in step).
    pub async fn decide(
        &self,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> Result<(), TemporalError> {
        let not_after = SystemTime::now() + self.decision_timeout;
        let request = DecideRequest {
            decisions: decisions.into_iter().collect(),
            not_after_ms: not_after
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_millis() as u64),
        };
        let update = self.handle.execute_update(
            AgentRun::decide,
            request,
            WorkflowExecuteUpdateOptions::default(),
        );
        let refused = |message: String| TemporalError::Decisions {
            run_id: self.run_id.clone(),
            message,
        };
        match tokio::time::timeout(self.decision_timeout, update).await {
            Err(_) => Err(TemporalError::DecisionsNotTaken {
                run_id: self.run_id.clone(),
                task_queue: self.task_queue.clone(),
                waited: self.decision_timeout,
            }),
            Ok(Ok(())) => Ok(()),
            Ok(Err(WorkflowUpdateError::Failed(failure))) => Err(refused(failure.message)),
            Ok(Err(other)) => Err(self.interaction(wording::update(&other))),
        }
    }
}

/// A run on Temporal about to start: made by [`Client::run`]. Await it for the run's result, or
/// [`start`](Self::start) it for a handle.
///
/// Run-scope hooks and tool sources travel to the workers when they are data
/// (`RunOptions::with_stored`, `RunOptions::with_stored_tools`: command hooks, MCP servers),
/// which build them again with their runtime's restorers (`Runtime::restores`,
/// `Runtime::restores_tools`). Closures cannot travel: options with run-scope hooks or tool
/// sources that are not data are an error (register those on the worker's runtime or the
/// agent).
#[must_use = "a run request does nothing until it is awaited or started"]
pub struct RunRequest<'c, S = (), O = String> {
    client: &'c Client,
    origin: Origin,
    options: RunOptions,
    _types: PhantomData<fn() -> (S, O)>,
}

/// What a [`RunRequest`] starts.
#[derive(Debug)]
pub(crate) enum Origin {
    /// A run of `agent` on `input`.
    New {
        agent: String,
        input: agentry_core::Content,
    },
    /// A fork of the stopped run `from` ([`Client::fork`]).
    Fork {
        from: String,
        fork: agentry_core::fork::Fork,
    },
}

impl<S, O> std::fmt::Debug for RunRequest<'_, S, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("RunRequest");
        match &self.origin {
            Origin::New { agent, .. } => out.field("agent", agent),
            Origin::Fork { from, fork } => out.field("fork_of", from).field("at_step", &fork.step),
        };
        out.finish_non_exhaustive()
    }
}

impl<'c> RunRequest<'c> {
    /// A request of `client` to start what `origin` says, with default options.
    pub(crate) fn of(client: &'c Client, origin: Origin) -> Self {
        RunRequest {
            client,
            origin,
            options: RunOptions::new(),
            _types: PhantomData,
        }
    }
}

impl<'c, S, O> RunRequest<'c, S, O> {
    /// The run with these options (its id, session, user, tags, metadata, stored hooks).
    pub fn with(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// The run's result read as state `S2` and output `O2` (what the worker's agent holds).
    pub fn typed<S2, O2>(self) -> RunRequest<'c, S2, O2> {
        RunRequest {
            client: self.client,
            origin: self.origin,
            options: self.options,
            _types: PhantomData,
        }
    }

    /// Starts the run and returns its handle once the workflow is started. The run id (the
    /// workflow id) is the options' `run_id`, or a fresh UUID; a run id already running is an
    /// error.
    pub async fn start(self) -> Result<RunHandle, TemporalError> {
        match self.origin {
            Origin::New { agent, input } => self.client.start(agent, input, self.options).await,
            Origin::Fork { from, fork } => self.client.start_fork(&from, &fork, self.options).await,
        }
    }
}

impl<'c, S, O> IntoFuture for RunRequest<'c, S, O>
where
    S: DeserializeOwned + Send + 'c,
    O: DeserializeOwned + Send + 'c,
{
    type Output = Result<RunOutput<S, O>, TemporalError>;
    type IntoFuture = BoxFuture<'c, Self::Output>;

    /// Starts the run and waits for its result.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.start().await?.result().await })
    }
}
