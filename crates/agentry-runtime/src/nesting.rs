//! Nested runs: how deep a run is, and driving a nested run on a task of its own so that the
//! stack does not grow with the depth.
//!
//! A run's body runs with its depth in a task-local, so a run started from inside it (a
//! sub-agent, or a tool or hook that calls `Runtime::run`) knows it is nested one level deeper.
//! A nested run is driven on a tokio task of its own: polling it starts from the bottom of a
//! worker's stack instead of on top of every run that encloses it, and the task is aborted
//! when whoever awaits it is dropped (its enclosing run cancelled or interrupted).

use super::driver::{Driver, Finished, Start};
use agentry_core::{Error, RunEngine};
use std::future::Future;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    /// The context of the run whose body is being polled.
    static ENCLOSING: RunEngine;
}

/// The run whose body encloses the caller, if one does.
pub(crate) fn enclosing() -> Option<RunEngine> {
    ENCLOSING.try_with(RunEngine::clone).ok()
}

/// Runs `body` as the body of the run `run`.
pub(crate) fn inside<F: Future>(run: RunEngine, body: F) -> impl Future<Output = F::Output> {
    ENCLOSING.scope(run, body)
}

/// The depth of a run started under `parent`, or the error when that is deeper than `limit`.
pub(crate) fn nested_depth(parent: &RunEngine, limit: u32) -> Result<u32, Error> {
    let parent = parent.context();
    let depth = parent.depth() + 1;
    if depth > limit {
        return Err(Error::DepthLimit {
            path: parent.agent_path().to_string(),
            depth,
            limit,
        });
    }
    Ok(depth)
}

/// Drives a nested run on a task of its own. If this future is dropped (the enclosing run was
/// interrupted), the task is aborted, unless the nested run was cancelled: then it is left to end
/// as a cancelled run does (its hooks closing what it had open, its checkpoint written), which
/// its own time limits bound.
pub(crate) async fn drive_nested(driver: Box<Driver>, start: Start) -> Result<Finished, Error> {
    let cancel = driver.scope.context().cancellation().clone();
    let mut task = NestedTask {
        handle: Some(tokio::spawn(driver.drive(start))),
        cancel,
    };
    let handle = task
        .handle
        .as_mut()
        .expect("the task is there until it ends");
    let joined = handle.await;
    task.handle = None;
    match joined {
        Ok(outcome) => outcome,
        Err(e) if e.is_panic() => Err(Error::Task(format!(
            "a nested run panicked: {}",
            agentry_core::panic_message(e.into_panic())
        ))),
        Err(e) => Err(Error::Task(e.to_string())),
    }
}

/// A nested run's task while someone awaits it.
struct NestedTask {
    handle: Option<JoinHandle<Result<Finished, Error>>>,
    cancel: CancellationToken,
}

impl Drop for NestedTask {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take()
            && !self.cancel.is_cancelled()
        {
            handle.abort();
        }
    }
}
