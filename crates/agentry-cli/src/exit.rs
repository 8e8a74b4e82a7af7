//! The exit codes (`agentry --help` lists them).

use agentry::{Error, StoreError};

/// How `agentry` exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The run ended with a final answer, or the command succeeded.
    Ok,
    /// The run failed, or the command could not do what it was asked.
    Failed,
    /// Bad usage or a bad config file.
    Usage,
    /// The run waits for approval.
    AwaitingApproval,
    /// The run stopped before a final answer.
    Stopped,
    /// Another process drives the run.
    Leased,
    /// The run was cancelled.
    Cancelled,
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::AwaitingApproval => 3,
            Exit::Stopped => 4,
            Exit::Leased => 5,
            Exit::Cancelled => 130,
        }
    }

    /// The code for a run's error.
    pub(crate) fn of_error(e: &Error) -> Exit {
        match e {
            Error::Store(StoreError::Leased { .. } | StoreError::Conflict { .. }) => Exit::Leased,
            _ => Exit::Failed,
        }
    }
}
