//! The handle of a started run: its event stream, cancellation and result.

use agentry_core::{Error, RunEvent, RunOutput};
use futures::Stream;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;
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
    pub(crate) leave: Arc<AtomicBool>,
    pub(crate) join: JoinHandle<Result<RunOutput<S, O>, Error>>,
    pub(crate) stored: watch::Receiver<Option<bool>>,
}

/// Where a run started on a task reports: its event stream and its cancellation.
#[derive(Default)]
pub(crate) struct Observe {
    pub(crate) events: Option<UnboundedSender<RunEvent>>,
    pub(crate) cancel: Option<CancellationToken>,
    /// Set by [`RunHandle::leave`] before it cancels: the driver leaves the run instead.
    pub(crate) leave: Option<Arc<AtomicBool>>,
    /// Told whether the run is in the store: at its first checkpoint written, or (`false`)
    /// when the runtime has no store.
    pub(crate) stored: Option<watch::Sender<Option<bool>>>,
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
        let leave = Arc::new(AtomicBool::new(false));
        let (told, stored) = watch::channel(None);
        let join = tokio::spawn(run(Observe {
            events: Some(tx),
            cancel: Some(cancel.clone()),
            leave: Some(Arc::clone(&leave)),
            stored: Some(told),
        }));
        RunHandle {
            run_id,
            events,
            cancel,
            leave,
            join,
            stored,
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

    /// Stops driving the run without ending it, for a process that shuts down: it stops at its
    /// next await point as a cancelled run would, but is left as its last checkpoint holds it,
    /// `running`, with its lease released, so any process that opens its store resumes it at
    /// once (`Runtime::resume`), calls in flight issued again with the same ids. The handle's
    /// result is [`Error::Left`]. A run without a store has nothing to be left in: it is
    /// cancelled.
    pub fn leave(&self) {
        self.leave.store(true, Ordering::Release);
        self.cancel.cancel();
    }

    /// The run's cancellation token.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Waits until the run is in the runtime's store, so that any process opening that store
    /// finds it (its first checkpoint written, or at once for a run that was stored already),
    /// and says whether it is: `false` when the runtime has no store, or when the run ended
    /// before anything of it was written (its error is [`result`](Self::result)'s).
    ///
    /// A service that hands out a run's id before the run ends awaits this first, so the id
    /// it hands out names a run that survives the process.
    ///
    /// The future borrows nothing: take it, then hand the handle on.
    pub fn stored(&self) -> impl Future<Output = bool> + Send + 'static {
        let mut told = self.stored.clone();
        async move {
            matches!(
                told.wait_for(Option::is_some).await.as_deref(),
                Ok(Some(true))
            )
        }
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
