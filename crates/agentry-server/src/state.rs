//! What every handler shares: the runtime, the store, the agents, the hubs of the runs this
//! process drives.

use crate::agents::{Go, ServedAgent};
use crate::error::ApiError;
use crate::hub::{Hubs, RunHub};
use agentry::{Redact, RunStore, Runtime, StoredRun};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The server's shared state (cheap to clone).
#[derive(Clone)]
pub(crate) struct AppState(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) runtime: Runtime,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) agents: BTreeMap<String, Arc<dyn ServedAgent>>,
    pub(crate) default_agent: String,
    pub(crate) hubs: Arc<Hubs>,
    pub(crate) redactor: Option<Arc<dyn Redact>>,
    /// Ends every event stream when the server shuts down.
    pub(crate) shutdown: CancellationToken,
    /// How often a stream of a run driven elsewhere looks for new events.
    pub(crate) poll: Duration,
    /// How many stored events a stream reads at once.
    pub(crate) events_page: usize,
    /// What every served run starts with.
    pub(crate) options: agentry::RunOptions,
    /// True when requests must carry a bearer token.
    pub(crate) token_required: bool,
    /// What ends a session for the hooks, when the server was given it.
    pub(crate) session_end: Option<crate::server::SessionEnd>,
    /// Each agent's price, where the server was given it.
    pub(crate) prices: crate::pricing::Prices,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The view of a stored run, priced.
    pub(crate) fn view(&self, stored: &agentry::StoredRun) -> crate::api::RunView {
        crate::api::RunView::of(stored, self.prices.get(&stored.snapshot.agent).copied())
    }

    /// The item of a listed run, priced.
    pub(crate) fn item(&self, summary: agentry::RunSummary) -> crate::api::RunItem {
        let price = self.prices.get(&summary.agent).copied();
        crate::api::RunItem::of(summary, price)
    }

    /// The agent `name` names, or the default one.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Arc<dyn ServedAgent>, ApiError> {
        let name = name.unwrap_or(&self.default_agent);
        self.agents.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            ApiError::not_found(format!(
                "no agent `{name}` is served here; the agents are {}",
                known.join(", ")
            ))
        })
    }

    /// The stored run `run_id`, or 404.
    pub(crate) async fn load(&self, run_id: &str) -> Result<StoredRun, ApiError> {
        self.store
            .load(run_id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("no run `{run_id}` in the store")))
    }

    /// The number of `run_id`'s last recorded event.
    pub(crate) async fn last_seq(&self, run_id: &str) -> Result<u64, ApiError> {
        Ok(self.store.last_event_seq(run_id).await?)
    }

    /// Starts a drive of `run_id` on a task, with a hub that holds its events (after the
    /// recorded event `base`), and returns once the run is in the store, so the id a client is
    /// given names a run that any server on the store finds and that outlives this process.
    /// A run that ended before it could be stored is an error that says why.
    pub(crate) async fn launch(
        &self,
        agent: &Arc<dyn ServedAgent>,
        run_id: &str,
        go: Go,
        base: u64,
    ) -> Result<Arc<RunHub>, ApiError> {
        let hub = RunHub::new(base, Arc::clone(&self.prices));
        self.hubs.insert(run_id, Arc::clone(&hub));
        let driven = agent.go(&self.runtime, go, Arc::clone(&hub));
        hub.set_cancel(driven.cancel);
        let (failed, failure) = tokio::sync::oneshot::channel();
        let (hubs, id, held) = (Arc::clone(&self.hubs), run_id.to_owned(), Arc::clone(&hub));
        tokio::spawn(async move {
            if let Err(error) = driven.done.await {
                tracing::warn!(run_id = id, %error, "a served run ended with an error");
                let _ = failed.send(error.to_string());
            }
            held.finish();
            hubs.release_later(id, held);
        });
        if driven.stored.await {
            return Ok(hub);
        }
        let why = failure
            .await
            .unwrap_or_else(|_| "it ended before its first checkpoint".to_owned());
        Err(ApiError::internal(format!(
            "run `{run_id}` could not be stored: {}",
            self.redact_text(&why)
        )))
    }

    /// The pending calls of the stored run, when it waits for approval.
    pub(crate) fn pending(stored: &StoredRun) -> Option<&[agentry::PendingApproval]> {
        match &stored.snapshot.stop {
            Some(agentry::StopReason::AwaitingApproval { pending }) => Some(pending),
            _ => None,
        }
    }

    /// Goes on with the paused run `stored` with `decisions` (each pending call decided once)
    /// in a drive of this process; the conflict error names the run.
    pub(crate) async fn go_on(
        &self,
        stored: &StoredRun,
        decisions: Vec<agentry::Decision>,
    ) -> Result<Arc<RunHub>, ApiError> {
        let run_id = &stored.snapshot.run_id;
        let pending = Self::pending(stored).ok_or_else(|| {
            ApiError::conflict(format!(
                "run `{run_id}` is not waiting for approval (it is {})",
                stored.snapshot.status()
            ))
        })?;
        agentry::match_decisions(pending, decisions.iter().cloned())
            .map_err(|e| ApiError::conflict(format!("cannot decide run `{run_id}`: {e}")))?;
        let agent = self.agent(Some(&stored.snapshot.agent))?.clone();
        let base = self.last_seq(run_id).await?;
        let go = Go::Decide {
            run_id: run_id.clone(),
            decisions,
        };
        self.launch(&agent, run_id, go, base).await
    }

    /// The run of `session` that waits for approval (`what` names the session to the client:
    /// `chat`, `thread`).
    pub(crate) async fn paused_in(&self, session: &str, what: &str) -> Result<StoredRun, ApiError> {
        let query = agentry::RunQuery::session(session)
            .status(agentry::RunStatus::AwaitingApproval)
            .limit(1);
        let paused = self.store.list(&query).await?.into_iter().next();
        let Some(paused) = paused else {
            return Err(ApiError::conflict(format!(
                "{what} `{session}` has no run waiting for approval"
            )));
        };
        self.load(&paused.run_id).await
    }

    /// `value` with secrets masked, when the runtime masks them.
    pub(crate) fn redact(&self, mut value: Value) -> Value {
        if let Some(r) = &self.redactor {
            agentry::redact::redact_value(&**r, &mut value);
        }
        value
    }

    /// `text` with the server's redactor applied.
    pub(crate) fn redact_text(&self, text: &str) -> String {
        match &self.redactor {
            Some(r) => r.redact(text).into_owned(),
            None => text.to_owned(),
        }
    }
}
