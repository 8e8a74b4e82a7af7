//! The Temporal client's errors in words: what the server said, without the Rust forms
//! (`Some(..)`, enum debug output) the SDK's messages carry.

use temporalio_client::errors::{
    WorkflowGetResultError, WorkflowInteractionError, WorkflowQueryError, WorkflowStartError,
    WorkflowUpdateError,
};
use temporalio_client::tonic::Status;

/// What a gRPC status says: its message and what its code means.
pub(crate) fn status(status: &Status) -> String {
    let message = status.message().trim();
    let meaning = status.code().description();
    if message.is_empty() {
        format!("the server answered: {meaning}")
    } else {
        format!("the server answered: {message} ({meaning})")
    }
}

/// Why a run could not be started.
pub(crate) fn start(e: &WorkflowStartError, run_id: &str) -> String {
    match e {
        WorkflowStartError::AlreadyStarted { .. } => format!(
            "a run with id `{run_id}` is already under way; give the new run another id, or wait for that one"
        ),
        WorkflowStartError::PayloadConversion(e) => {
            format!("its input could not be encoded: {e}")
        }
        WorkflowStartError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}

/// Why a query failed.
pub(crate) fn query(e: &WorkflowQueryError) -> String {
    match e {
        WorkflowQueryError::NotFound(_) => not_found(),
        WorkflowQueryError::Rejected { .. } => {
            "its workflow refused the query (it is not running)".into()
        }
        WorkflowQueryError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}

/// Why an update failed, other than the workflow refusing it.
pub(crate) fn update(e: &WorkflowUpdateError) -> String {
    match e {
        WorkflowUpdateError::NotFound(_) => not_found(),
        WorkflowUpdateError::Failed(failure) => failure.message.clone(),
        WorkflowUpdateError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}

/// Why waiting for a result failed.
pub(crate) fn result(e: &WorkflowGetResultError) -> String {
    match e {
        WorkflowGetResultError::NotFound(_) => not_found(),
        WorkflowGetResultError::Terminated { .. } => "its workflow was terminated".into(),
        WorkflowGetResultError::TimedOut => "its workflow timed out".into(),
        WorkflowGetResultError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}

/// Why describing or cancelling a workflow failed.
pub(crate) fn interaction(e: &WorkflowInteractionError) -> String {
    match e {
        WorkflowInteractionError::NotFound(_) => not_found(),
        WorkflowInteractionError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}

fn not_found() -> String {
    "no such run on this namespace (check the run id and the namespace)".into()
}

/// Why a listing failed.
pub(crate) fn client(e: &temporalio_client::errors::ClientError) -> String {
    match e {
        temporalio_client::errors::ClientError::Rpc(s) => status(s),
        other => other.to_string(),
    }
}
