//! The crate's error type.

/// What can go wrong starting, running or reaching a run on Temporal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemporalError {
    /// The Temporal server could not be reached.
    #[error(
        "cannot connect to the Temporal server at `{target}`: {message}; check that it runs and listens there (`temporal server start-dev` for a local one)"
    )]
    Connect {
        /// The address connected to.
        target: String,
        /// What failed.
        message: String,
    },
    /// The worker could not be created or stopped with an error.
    #[error("the Temporal worker failed: {0}; check the server address, namespace and task queue")]
    Worker(String),
    /// A run could not be started.
    #[error("run `{run_id}` could not be started: {message}")]
    Start {
        /// The run id (the workflow id).
        run_id: String,
        /// What failed.
        message: String,
    },
    /// Options that cannot travel to a worker.
    #[error("{0}")]
    Options(String),
    /// The run failed: a hook failed, the model failed after its retries, or the worker could
    /// not run it (an agent it does not host).
    #[error("run `{run_id}` failed: {error}")]
    RunFailed {
        /// The run id.
        run_id: String,
        /// The run's error.
        error: String,
    },
    /// The run's workflow ended without a result (terminated, or timed out).
    #[error("run `{run_id}` ended without a result: {message}")]
    Ended {
        /// The run id.
        run_id: String,
        /// How it ended.
        message: String,
    },
    /// Talking to the run failed (it does not exist, or the server refused).
    #[error("run `{run_id}`: {message}")]
    Interaction {
        /// The run id.
        run_id: String,
        /// What failed.
        message: String,
    },
    /// No worker polls the task queue a client starts runs on.
    #[error(
        "no worker polls task queue `{task_queue}` on namespace `{namespace}` (none seen within {waited:?}), so run `{run_id}` would wait for one forever; start a worker on that task queue (`agentry worker`, or a `Worker` in your program), or point the client at the task queue your workers poll"
    )]
    NoWorker {
        /// The run that was about to start.
        run_id: String,
        /// The task queue.
        task_queue: String,
        /// The namespace.
        namespace: String,
        /// How long pollers were waited for.
        waited: std::time::Duration,
    },
    /// No worker took decisions up in time: they were not applied, and never will be.
    #[error(
        "run `{run_id}`: no worker took the decisions up within {waited:?}, so they were not applied (a worker that starts later refuses them); start a worker on task queue `{task_queue}` and decide again"
    )]
    DecisionsNotTaken {
        /// The run.
        run_id: String,
        /// The task queue.
        task_queue: String,
        /// How long the client waited.
        waited: std::time::Duration,
    },
    /// Decisions that do not fit the run's pending calls.
    #[error("run `{run_id}` refused the decisions: {message}")]
    Decisions {
        /// The run id.
        run_id: String,
        /// Why.
        message: String,
    },
    /// The run's result could not be read as the asked types.
    #[error(
        "run `{run_id}`: its {what} could not be read as `{ty}`: {message}; ask for the agent's own state and output types"
    )]
    Type {
        /// The run id.
        run_id: String,
        /// `state` or `output`.
        what: &'static str,
        /// The type asked for.
        ty: &'static str,
        /// The parse error.
        message: String,
    },
    /// A run could not be forked where asked ([`Client::fork`](crate::Client::fork)): it is
    /// unknown or has not stopped, has no such step, was compacted or continued as a new
    /// execution, or the step ended with an answer and the fork was given no input.
    #[error(transparent)]
    Fork(#[from] agentry_core::fork::ForkError),
}
