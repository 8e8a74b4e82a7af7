//! The handle of a started run: its event stream, cancellation and result.

use agentry_core::{Error, RunEvent, RunOutput};
use futures::channel::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A run started with [`Runtime::start`](crate::Runtime::start): stream its events, cancel it,
/// await its result.
///
/// Events of sub-agents arrive on the same stream, tagged with their agent path. The stream ends
/// when the run does.
pub struct RunHandle<S, O> {
    pub(crate) run_id: String,
    pub(crate) events: UnboundedReceiver<RunEvent>,
    pub(crate) cancel: CancellationToken,
    pub(crate) join: JoinHandle<Result<RunOutput<S, O>, Error>>,
}

impl<S, O> RunHandle<S, O> {
    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The event stream (a `futures::Stream` of [`RunEvent`]).
    pub fn events(&mut self) -> &mut UnboundedReceiver<RunEvent> {
        &mut self.events
    }

    /// Cancels the run: it stops at its next await point and ends with
    /// [`StopReason::Cancelled`](agentry_core::StopReason::Cancelled).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancellation token.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Waits for the run to end.
    pub async fn result(self) -> Result<RunOutput<S, O>, Error> {
        match self.join.await {
            Ok(result) => result,
            Err(e) => Err(Error::Task(e.to_string())),
        }
    }
}
