//! The handle of a started run: its event stream, cancellation and result.

use agentry_core::{Error, RunEvent, RunOutput};
use futures::Stream;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use std::future::Future;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A run started with [`RunRequest::start`](crate::RunRequest::start): stream its events, cancel it,
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

/// Where a run started on a task reports: its event stream and its cancellation.
#[derive(Default)]
pub(crate) struct Observe {
    pub(crate) events: Option<UnboundedSender<RunEvent>>,
    pub(crate) cancel: Option<CancellationToken>,
}

impl<S: Send + 'static, O: Send + 'static> RunHandle<S, O> {
    /// Spawns `run` with an event stream and a cancellation token, and returns its handle.
    pub(crate) fn spawn<F, Fut>(run_id: String, run: F) -> Self
    where
        F: FnOnce(Observe) -> Fut,
        Fut: Future<Output = Result<RunOutput<S, O>, Error>> + Send + 'static,
    {
        let (tx, events) = unbounded();
        let cancel = CancellationToken::new();
        let join = tokio::spawn(run(Observe {
            events: Some(tx),
            cancel: Some(cancel.clone()),
        }));
        RunHandle {
            run_id,
            events,
            cancel,
            join,
        }
    }
}

impl<S, O> RunHandle<S, O> {
    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's events as they happen, oldest first: a [`Stream`] that ends when the run does
    /// (read it with `futures::StreamExt`, e.g. `while let Some(ev) = run.events().next().await`).
    /// Taken again, it goes on where the last one stopped.
    pub fn events(&mut self) -> RunEvents<'_> {
        RunEvents(&mut self.events)
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

/// The event stream of a run started with [`RunRequest::start`](crate::RunRequest::start)
/// ([`RunHandle::events`]): a [`Stream`] of [`RunEvent`]s that ends when the run does. It
/// borrows the handle only while it is used, so the run can be cancelled between two events.
#[derive(Debug)]
pub struct RunEvents<'a>(&'a mut UnboundedReceiver<RunEvent>);

impl Stream for RunEvents<'_> {
    type Item = RunEvent;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<RunEvent>> {
        std::pin::Pin::new(&mut *self.0).poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
