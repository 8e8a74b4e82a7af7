//! The error type of agentry: every way a run can fail, each saying what to do.

use crate::hooks::HookError;
use crate::{ModelError, StateError};

/// Why a run (or an agent definition) failed.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A hook failed and its policy fails the run.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The agent has no model and the runtime no default.
    #[error(
        "agent `{agent}` has no model: give it one with `.model(..)` or set one with `Runtime::default_model(..)`"
    )]
    NoModel {
        /// The agent.
        agent: String,
    },
    /// The final answer did not match the output type after the allowed attempts.
    #[error(
        "agent `{agent}`: the final answer did not match the output schema after {attempts} attempts (last error: {error}); raise `output_retries` or make the instructions clearer"
    )]
    InvalidOutput {
        /// The agent.
        agent: String,
        /// Attempts made.
        attempts: u32,
        /// The last validation error.
        error: String,
    },
    /// AfterModel hooks kept asking for retries.
    #[error(
        "agent `{agent}`: AfterModel hooks asked for more than {limit} retries in step {step}; raise `max_model_retries` or relax the hook"
    )]
    TooManyRetries {
        /// The agent.
        agent: String,
        /// The step.
        step: u32,
        /// The limit.
        limit: u32,
    },
    /// Compacting the history failed and the compaction's policy fails the run.
    #[error(
        "agent `{agent}`: compacting the history failed: {error}; use `OnCompactError::Continue` to go on uncompacted, or a CompactFailed hook to supply a summary"
    )]
    Compaction {
        /// The agent.
        agent: String,
        /// The summarising call's failure.
        error: ModelError,
    },
    /// The agent definition is invalid.
    #[error("invalid agent `{agent}`: {message}")]
    Definition {
        /// The agent.
        agent: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// State access failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A stored run cannot be forked where asked.
    #[error(transparent)]
    Fork(#[from] crate::fork::ForkError),
    /// A snapshot cannot be resumed.
    #[error("cannot resume run `{run_id}`: {message}")]
    Resume {
        /// The run.
        run_id: String,
        /// Why.
        message: String,
    },
    /// A run of a session cannot continue the session's conversation.
    #[error("cannot continue session `{session_id}`: {message}")]
    Session {
        /// The session.
        session_id: String,
        /// Why, and what to do.
        message: String,
    },
    /// The run store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A run would be nested deeper than the runtime allows: a sub-agent of a sub-agent of ...,
    /// or a tool or hook that starts a run inside a run (an agent that calls itself).
    #[error(
        "`{path}` cannot start a run nested {depth} levels deep: the limit is {limit}; raise it with `Runtime::max_depth(..)`, or look for an agent that calls itself (as a sub-agent, or from a tool that runs it again)"
    )]
    DepthLimit {
        /// The agent path of the run that tried to start the nested run.
        path: String,
        /// The depth the new run would have had.
        depth: u32,
        /// The limit.
        limit: u32,
    },
    /// The process stopped driving the run without ending it (`RunHandle::leave`, as a server
    /// does at shutdown): it stands at its last checkpoint, `running`, its lease released, for
    /// any process to resume.
    #[error(
        "run `{run_id}` was left at its last checkpoint, unfinished: resume it (any process that opens its store may)"
    )]
    Left {
        /// The run.
        run_id: String,
    },
    /// The task driving a started run panicked or was aborted.
    #[error("the run task ended abnormally: {0}")]
    Task(String),
    /// A middleware or other user code failed with a message.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// An error with a message, for middleware and custom runtimes.
    pub fn other(message: impl Into<String>) -> Self {
        Error::Other(message.into())
    }
}
