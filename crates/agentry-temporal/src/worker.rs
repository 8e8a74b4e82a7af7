//! The worker: hosts agents (with their tools, sub-agents and hooks) and runs their runs'
//! workflows and activities.

use crate::TemporalError;
use crate::activities::{AgentActivities, Hosted};
use crate::cache::HistoryCache;
use crate::connect::Server;
use crate::scopes::ScopeCache;
use crate::workflow::AgentRun;
use agentry_core::{Agent, AgentDef};
use agentry_runtime::Runtime;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use temporalio_sdk::WorkerOptions;
use temporalio_sdk::runtime::{PollerBehavior, RuntimeOptions};

/// A worker: the agents it hosts and the [`Runtime`] whose runtime-scope hooks, default model
/// and time limits their runs use (its store, if any, is not used: Temporal records the runs).
///
/// [`run`](Self::run) polls the server's task queue until [`WorkerStop::stop`] is called,
/// connecting with backoff while the server is not up yet; [`spawn`](Self::spawn) does so on a
/// thread of its own, after a first connection it reports at once.
pub struct Worker {
    runtime: Runtime,
    agents: HashMap<String, Arc<AgentDef>>,
    server: Server,
    max_cached_runs: usize,
    sticky_timeout: Duration,
    shutdown_grace: Duration,
    pollers: Option<(usize, usize)>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut agents: Vec<&String> = self.agents.keys().collect();
        agents.sort();
        f.debug_struct("Worker")
            .field("server", &self.server)
            .field("agents", &agents)
            .finish()
    }
}

impl Worker {
    /// A worker for `server`'s task queue whose runs use `runtime`.
    pub fn new(server: Server, runtime: Runtime) -> Self {
        Worker {
            runtime,
            agents: HashMap::new(),
            server,
            max_cached_runs: 1000,
            sticky_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(30),
            pollers: None,
        }
    }

    /// Hosts `agent` (its sub-agents come with it): clients start its runs by its name. Every
    /// worker of the task queue must host the same agents, built the same way.
    pub fn agent<S, O>(mut self, agent: &Agent<S, O>) -> Self {
        self.agents
            .insert(agent.name().to_string(), agent.def().clone());
        self
    }

    /// How many runs the worker keeps in memory between their steps (1,000 by default); others
    /// are replayed from their history when their next step comes.
    pub fn max_cached_runs(mut self, runs: usize) -> Self {
        self.max_cached_runs = runs;
        self
    }

    /// How long a run's next workflow task waits for the worker that ran its last one (which
    /// has the run in memory) before any worker of the queue may take it: 5 s by default. A
    /// worker that died delays its runs' next steps by this much at most, on top of the
    /// activities' heartbeat limit ([`Limits::heartbeat`](crate::Limits::heartbeat)).
    pub fn sticky_timeout(mut self, timeout: Duration) -> Self {
        self.sticky_timeout = timeout;
        self
    }

    /// How long a stopping worker lets the activities under way finish (30 s by default). Those
    /// still running then are cancelled and fail as the worker's shutdown, so another worker
    /// takes them up at once (a tool call again with its idempotency key), rather than after
    /// their own time limit: stopping a worker never waits for a hung model or tool call.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Polls for at most `workflow` workflow tasks (at least 2) and `activity` activity tasks
    /// at once, instead of the SDK's own choice (5 each, scaled by the server when it supports
    /// that). More pollers pick up more runs' steps at once when many runs share a worker.
    pub fn pollers(mut self, workflow: usize, activity: usize) -> Self {
        self.pollers = Some((workflow.max(2), activity.max(1)));
        self
    }

    /// Connects and polls the task queue until stopped through `stop` (made by
    /// [`WorkerStop::new`]). A server that cannot be reached yet is tried again with backoff
    /// (0.2 s doubling to 10 s, each failure a warning), so a worker may start before its
    /// server; a stop while it waits ends it. The future is not `Send`: await it on the
    /// thread that made it (in `main`), or use [`spawn`](Self::spawn).
    pub async fn run(self, stop: WorkerStop) -> Result<(), TemporalError> {
        let mut backoff = Duration::from_millis(200);
        let client = loop {
            match self.server.connect().await {
                Ok(client) => break client,
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "the Temporal worker cannot connect yet");
                    tokio::select! {
                        _ = stop.0.notified() => return Ok(()),
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        };
        self.serve(client, stop).await
    }

    /// Polls the task queue with `client` until stopped.
    async fn serve(
        self,
        client: temporalio_client::Client,
        stop: WorkerStop,
    ) -> Result<(), TemporalError> {
        let runtime = temporalio_sdk::Runtime::from_current_tokio(RuntimeOptions::default())
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let redactor = self.runtime.redactor().cloned();
        let activities = AgentActivities {
            hosted: Arc::new(Hosted {
                runtime: self.runtime,
                agents: self.agents,
            }),
            cache: Arc::new(HistoryCache::new(self.max_cached_runs)),
            scopes: Arc::new(ScopeCache::new(self.max_cached_runs)),
            client: client.clone(),
        };
        let (workflow_pollers, activity_pollers) = match self.pollers {
            Some((w, a)) => (
                Some(PollerBehavior::SimpleMaximum(w)),
                Some(PollerBehavior::SimpleMaximum(a)),
            ),
            None => (None, None),
        };
        let options = WorkerOptions::new(self.server.task_queue.clone())
            .max_cached_workflows(self.max_cached_runs)
            .sticky_queue_schedule_to_start_timeout(self.sticky_timeout)
            .graceful_shutdown_period(self.shutdown_grace)
            .maybe_workflow_task_poller_behavior(workflow_pollers)
            .maybe_activity_task_poller_behavior(activity_pollers)
            .register_workflow_with_factory::<AgentRun, _>(AgentRun::factory(redactor))
            .map_err(|e| TemporalError::Worker(e.to_string()))?
            .register_activities(activities)
            .build();
        let mut worker = temporalio_sdk::Worker::new(&runtime, client, options)
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let shutdown = worker.shutdown_handle();
        let stopped = stop.0.clone();
        let watcher = tokio::spawn(async move {
            stopped.notified().await;
            shutdown();
        });
        let outcome = worker
            .run()
            .await
            .map_err(|e| TemporalError::Worker(e.to_string()));
        watcher.abort();
        outcome
    }

    /// Runs the worker on a thread of its own, with a multi-threaded tokio runtime of its own,
    /// once it has connected: a server that cannot be reached is an error at once (use
    /// [`run`](Self::run) for a worker that waits for its server). The returned handle stops
    /// it (and waits for it) when told to or dropped.
    pub fn spawn(self) -> Result<SpawnedWorker, TemporalError> {
        let stop = WorkerStop::new();
        let handle = stop.clone();
        let (connected, outcome) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("agentry-temporal-worker".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = connected.send(Err(TemporalError::Worker(e.to_string())));
                        return Ok(());
                    }
                };
                rt.block_on(async move {
                    match self.server.connect().await {
                        Ok(client) => {
                            let _ = connected.send(Ok(()));
                            self.serve(client, handle).await
                        }
                        Err(e) => {
                            let _ = connected.send(Err(e));
                            Ok(())
                        }
                    }
                })
            })
            .map_err(|e| TemporalError::Worker(format!("its thread could not start: {e}")))?;
        match outcome.recv() {
            Ok(Ok(())) => Ok(SpawnedWorker {
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(TemporalError::Worker(
                "its thread ended before it connected".into(),
            )),
        }
    }
}

/// Stops a running [`Worker`]: it finishes the tasks it started, within its
/// [`shutdown_grace`](Worker::shutdown_grace) (a graceful shutdown), and its `run` returns.
#[derive(Clone, Debug, Default)]
pub struct WorkerStop(Arc<tokio::sync::Notify>);

impl WorkerStop {
    /// A stop signal for one worker.
    pub fn new() -> Self {
        WorkerStop::default()
    }

    /// Tells the worker to stop.
    pub fn stop(&self) {
        self.0.notify_one();
    }
}

/// A worker running on a thread of its own ([`Worker::spawn`]).
#[derive(Debug)]
pub struct SpawnedWorker {
    stop: WorkerStop,
    thread: Option<std::thread::JoinHandle<Result<(), TemporalError>>>,
}

impl SpawnedWorker {
    /// Stops the worker and waits for it: its error, if it failed.
    pub fn stop(mut self) -> Result<(), TemporalError> {
        self.stop_and_join()
    }

    /// True once the worker has stopped (it failed, or was stopped).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    fn stop_and_join(&mut self) -> Result<(), TemporalError> {
        self.stop.stop();
        match self.thread.take() {
            Some(thread) => thread.join().unwrap_or_else(|_| {
                Err(TemporalError::Worker("the worker thread panicked".into()))
            }),
            None => Ok(()),
        }
    }
}

impl Drop for SpawnedWorker {
    fn drop(&mut self) {
        if let Err(e) = self.stop_and_join() {
            tracing::warn!(error = %e, "the Temporal worker stopped with an error");
        }
    }
}
