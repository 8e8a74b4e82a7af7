//! The run as the engine drives it: what hooks and tools never reach.

use super::{OpenHook, RunContext, RunContextSpec, lock};
use crate::Notice;
use crate::StopReason;
use crate::run::events::RunEvent;
use crate::state::ErasedState;
use futures::channel::mpsc::UnboundedSender;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// One run as the engine that runs it sees it: the same run as its [`RunContext`], plus what
/// only the engine does with it — numbering steps, collecting the notices hooks and tools leave,
/// sending events to the stream and the recorded history, taking the state at the end.
///
/// Runtimes create it ([`RunEngine::new`]) and hand hooks and tools its [`context`](Self::context).
/// Nothing a hook or tool receives leads back to it. Cheap to clone (one `Arc`).
#[derive(Clone, Debug)]
pub struct RunEngine(RunContext);

impl RunEngine {
    /// Creates a run's context.
    pub fn new(spec: RunContextSpec) -> Self {
        RunEngine(RunContext::create(spec))
    }

    /// The run as hooks and tools see it.
    pub fn context(&self) -> &RunContext {
        &self.0
    }

    /// The spec of a run started inside this one (a sub-agent's): it inherits the session, user,
    /// tags and metadata, cancellation (as a child token), the event stream, the redactor, the
    /// hook timeout and the event history (its events are recorded in this run's too); its path is this run's path and `agent_name`.
    pub fn child_spec(
        &self,
        run_id: impl Into<String>,
        agent_name: Arc<str>,
        state: Box<dyn ErasedState>,
        depth: u32,
    ) -> RunContextSpec {
        let parent = &self.0;
        RunContextSpec {
            run_id: run_id.into(),
            parent_run_id: Some(parent.run_id().to_string()),
            agent_path: Arc::from(format!("{}/{}", parent.agent_path(), agent_name)),
            agent_name,
            info: parent.info().clone(),
            cancel: parent.cancellation().child_token(),
            state,
            observe_state: false,
            events: self.event_sender().cloned(),
            step: 0,
            redactor: self.redactor().cloned(),
            record_events: self.records_events(),
            enclosing_history: self.history(),
            hook_timeout: parent.hook_timeout(),
            depth,
        }
    }

    /// True when someone listens to this run's events: an event stream, or the store's event
    /// history.
    #[inline]
    pub fn has_event_stream(&self) -> bool {
        self.0.has_event_stream()
    }

    /// Sets the current step (runtimes call this).
    pub fn set_step(&self, step: u32) {
        self.0.0.step.store(step, Ordering::Relaxed);
    }

    /// Resolves with the stop reason once the earliest deadline set with
    /// [`stop_at`](Self::stop_at) has passed (runtimes race a run's work against this).
    pub async fn deadline_passed(&self) -> StopReason {
        loop {
            let set = self.0.0.stop_at_set.notified();
            match self.0.stop_deadline() {
                // Passed already (a hook asked to stop now): no timer to wait for.
                Some((at, reason)) if at <= Instant::now() => return reason,
                Some((at, reason)) => {
                    if tokio::time::timeout_at(at, set).await.is_err() {
                        return reason;
                    }
                }
                None => set.await,
            }
        }
    }

    /// True once the earliest deadline set with [`stop_at`](Self::stop_at) has passed.
    pub fn deadline_has_passed(&self) -> bool {
        self.0.0.has_stop_at.load(Ordering::Acquire)
            && lock(&self.0.0.stop_at)
                .as_ref()
                .is_some_and(|(at, _)| *at <= Instant::now())
    }

    /// The stop a deadline that has passed brings, if one has (one atomic load when no deadline
    /// is set; runtimes check it between steps).
    pub fn passed_deadline(&self) -> Option<StopReason> {
        if !self.0.0.has_stop_at.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.0.0.stop_at)
            .as_ref()
            .filter(|(at, _)| *at <= Instant::now())
            .map(|(_, stop)| stop.clone())
    }

    /// Takes the hooks that started and have not finished: when a run is interrupted, the
    /// runtime reports each as failed, so every HookStarted has its closing event.
    pub fn take_open_hooks(&self) -> Vec<OpenHook> {
        std::mem::take(&mut *lock(&self.0.0.open_hooks))
    }

    /// Takes the state out of the context (runtimes call this when the run ends).
    pub fn take_state(&self, replacement: Box<dyn ErasedState>) -> Box<dyn ErasedState> {
        std::mem::replace(&mut *lock(&self.0.0.state), replacement)
    }

    /// True when a tool or hook left notices that [`take_notices`](Self::take_notices) would
    /// return (one atomic load).
    #[inline]
    pub fn has_notices(&self) -> bool {
        self.0.0.dirty.load(Ordering::Acquire)
    }

    /// Takes the notices recorded since the last call (runtimes call this after each tool call
    /// and hook chain; it costs one atomic load when there are none).
    pub fn take_notices(&self) -> Vec<Notice> {
        if !self.0.0.dirty.load(Ordering::Acquire) || !self.0.0.dirty.swap(false, Ordering::AcqRel)
        {
            return Vec::new();
        }
        std::mem::take(&mut *lock(&self.0.0.notices))
    }

    /// Sends an event to the run's stream and records it for the store's event history, masked
    /// by the run's redactor; `make` is only called when someone listens.
    pub fn send_event(&self, make: impl FnOnce(&Arc<str>) -> RunEvent) {
        self.0.send_event(make);
    }

    /// Takes the events recorded since the last call, oldest first (runtimes save them with each
    /// checkpoint).
    pub fn take_recorded(&self) -> Vec<crate::run::recorded::RecordedEvent> {
        match &self.0.0.recorded {
            Some(recorded) => recorded.take(),
            None => Vec::new(),
        }
    }

    /// Puts back events taken with [`take_recorded`](Self::take_recorded) whose checkpoint was
    /// not written, before any recorded since, so the next checkpoint saves them (oldest first).
    pub fn restore_recorded(&self, events: Vec<crate::run::recorded::RecordedEvent>) {
        if let Some(recorded) = &self.0.0.recorded {
            recorded.restore(events);
        }
    }

    /// True when events were recorded since the last [`take_recorded`](Self::take_recorded).
    pub fn has_recorded(&self) -> bool {
        self.0.0.recorded.as_ref().is_some_and(|r| !r.is_empty())
    }

    /// Whether the run's events are recorded for its store.
    pub fn records_events(&self) -> bool {
        self.0.0.recorded.is_some()
    }

    /// The run's recorded history, when it records one: a run nested in this one (a
    /// sub-agent's) records into it too ([`RunContextSpec::enclosing_history`]).
    pub fn history(&self) -> Option<crate::run::recorded::RecordedHistory> {
        self.0.0.recorded.clone()
    }

    /// The run's redactor, for child runs.
    pub fn redactor(&self) -> Option<&Arc<dyn crate::Redact>> {
        self.0.0.redactor.as_ref()
    }

    /// The event stream's sender, for child runs.
    pub fn event_sender(&self) -> Option<&UnboundedSender<RunEvent>> {
        self.0.0.events.as_ref()
    }
}
