//! The agents a server serves, whatever their state and output types: each is driven the same
//! way, its events pumped into a hub and its output reported as JSON.

use crate::hub::RunHub;
use agentry::{Agent, AgentState, Decision, RunHandle, RunOptions, RunOutput, Runtime};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a drive does.
pub(crate) enum Go {
    /// A new run on `input`.
    Start {
        /// The input.
        input: agentry::Content,
        /// Its options (session, user, tags, metadata).
        options: Box<RunOptions>,
    },
    /// A paused run going on with these decisions.
    Decide {
        /// The run.
        run_id: String,
        /// A decision per pending call.
        decisions: Vec<Decision>,
    },
    /// A cancelled, failed or orphaned run going on from its last checkpoint.
    Resume {
        /// The run.
        run_id: String,
    },
    /// A new run from a snapshot the store does not hold (a fork).
    Fork {
        /// Where it starts.
        snapshot: Box<agentry::RunSnapshot>,
    },
}

/// A drive under way: its cancellation, and a future that pumps its events into the hub it was
/// given and ends with the run.
pub(crate) struct Driven {
    pub(crate) cancel: CancellationToken,
    pub(crate) done: BoxFuture<'static, Result<(), agentry::Error>>,
    /// Whether the run reached the store ([`agentry::RunHandle::stored`]).
    pub(crate) stored: BoxFuture<'static, bool>,
}

/// An agent as a server drives it.
pub(crate) trait ServedAgent: Send + Sync + 'static {
    /// Its name.
    fn name(&self) -> &str;
    /// What it does, from its definition.
    fn description(&self) -> Option<&str>;
    /// The state a new run starts with, as JSON (null when it cannot be written as JSON).
    fn initial_state(&self) -> serde_json::Value;
    /// Starts a drive on a task ([`Go::Start`] with a run id in its options); [`Driven::done`]
    /// pumps its events into `hub`.
    fn go(&self, runtime: &Runtime, go: Go, hub: Arc<RunHub>) -> Driven;
    /// Replays the run `events` recorded with this agent as it is now (today's hooks), in
    /// memory, and compares ([`agentry::replay`]).
    fn replay<'a>(
        &'a self,
        runtime: &'a Runtime,
        events: &'a [agentry::StoredEvent],
    ) -> BoxFuture<'a, Result<agentry::replay::ReplayReport, agentry::replay::ReplayError>>;
}

impl<S, O> ServedAgent for Agent<S, O>
where
    S: AgentState,
    O: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        Agent::name(self)
    }

    fn description(&self) -> Option<&str> {
        self.def().description.as_deref()
    }

    fn initial_state(&self) -> serde_json::Value {
        self.def().initial_state.to_json().unwrap_or_default()
    }

    fn go(&self, runtime: &Runtime, go: Go, hub: Arc<RunHub>) -> Driven {
        let handle = match go {
            Go::Start { input, options } => runtime.run(self, input).with(*options).start(),
            Go::Decide { run_id, decisions } => runtime.decide(self, run_id, decisions).start(),
            Go::Resume { run_id } => runtime.resume(self, run_id).start(),
            Go::Fork { snapshot } => runtime.resume(self, *snapshot).start(),
        };
        Driven {
            cancel: handle.cancellation(),
            stored: Box::pin(handle.stored()),
            done: Box::pin(pump(handle, hub)),
        }
    }

    fn replay<'a>(
        &'a self,
        runtime: &'a Runtime,
        events: &'a [agentry::StoredEvent],
    ) -> BoxFuture<'a, Result<agentry::replay::ReplayReport, agentry::replay::ReplayError>> {
        Box::pin(agentry::replay::replay(runtime, self, events))
    }
}

/// Moves a drive's events into its hub until the run ends.
async fn pump<S: Send + 'static, O: Send + 'static>(
    mut handle: RunHandle<S, O>,
    hub: Arc<RunHub>,
) -> Result<(), agentry::Error> {
    let leave = hub.leaving();
    let mut left = false;
    loop {
        let mut events = handle.events();
        tokio::select! {
            event = events.next() => match event {
                Some(event) => hub.push(event),
                None => break,
            },
            () = leave.cancelled(), if !left => {
                handle.leave();
                left = true;
            }
        }
    }
    handle.result().await.map(|_: RunOutput<S, O>| ())
}
