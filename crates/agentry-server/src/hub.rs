//! The events of the runs this process drives, held while they run so every client that
//! follows one (a thousand on one run, or one that reconnects) reads them from one place, each
//! serialised once.

use crate::event_id::EventId;
use agentry::RunEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long a hub outlives its drive, for clients that reconnect right after the end.
const LINGER: Duration = Duration::from_secs(30);

/// One event as clients receive it.
#[derive(Debug)]
pub(crate) struct HubEvent {
    /// Its id in the run's stream.
    pub(crate) id: EventId,
    /// Its kind (`text_delta`, `run_finished`, ...).
    pub(crate) kind: &'static str,
    /// Its JSON form.
    pub(crate) json: String,
    /// The event.
    pub(crate) event: RunEvent,
}

/// An event's JSON object with the time it happened (`at_ms`, milliseconds since the Unix
/// epoch) as its last field.
pub(crate) fn with_time(json: String, at_ms: i64) -> String {
    with_field(json, "at_ms", at_ms)
}

/// A JSON object with the field `key` (a name that needs no escaping) set to `value` (its JSON
/// form) last.
pub(crate) fn with_field(mut json: String, key: &str, value: impl std::fmt::Display) -> String {
    if json.ends_with('}') {
        json.pop();
        if !json.ends_with('{') {
            json.push(',');
        }
        json.push('"');
        json.push_str(key);
        json.push_str("\":");
        json.push_str(&value.to_string());
        json.push('}');
    }
    json
}

/// The events of one drive of one run (a start, or a going on after a decision or a resume).
#[derive(Debug)]
pub(crate) struct RunHub {
    /// The number of the run's last recorded event when the drive began.
    pub(crate) base: u64,
    state: Mutex<HubState>,
    /// Bumped after every event and at the end.
    changed: watch::Sender<u64>,
    /// Cancels the drive, once it started.
    cancel: OnceLock<CancellationToken>,
    /// Leaves the run unfinished at its last checkpoint (at shutdown).
    leave: CancellationToken,
    /// Each agent's price, for its steps' cost.
    prices: crate::pricing::Prices,
}

#[derive(Debug, Default)]
struct HubState {
    events: Vec<Arc<HubEvent>>,
    last: EventId,
    done: bool,
}

impl RunHub {
    /// A hub for a drive that begins after the run's recorded event `base`.
    /// `prices` price its steps (`cost_usd` on `step_finished`).
    pub(crate) fn new(base: u64, prices: crate::pricing::Prices) -> Arc<Self> {
        Arc::new(RunHub {
            base,
            prices,
            state: Mutex::new(HubState {
                last: EventId::recorded(base),
                ..HubState::default()
            }),
            changed: watch::Sender::new(0),
            cancel: OnceLock::new(),
            leave: CancellationToken::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an event of the run: one its history records (its own or a sub-agent's) takes the
    /// next number of that history, the others (streamed text) the next place after it.
    pub(crate) fn push(&self, event: RunEvent) {
        let recorded = event.is_recorded();
        // Media go by reference, as the store records them: no stream, whichever door it goes
        // out by, carries their bytes (`GET /v1/media/{sha256}` reads them).
        let event = event.with_media_references().unwrap_or(event);
        let json = serde_json::to_string(&event).unwrap_or_else(|e| {
            serde_json::json!({"type": "error", "error": format!("unserialisable event: {e}")})
                .to_string()
        });
        let mut json = with_time(json, agentry::store::now_ms());
        if let Some(cost) = crate::pricing::step_cost(&self.prices, &event) {
            json = with_field(json, "cost_usd", cost);
        }
        let mut state = self.lock();
        let id = if recorded {
            EventId::recorded(state.last.seq + 1)
        } else {
            EventId {
                seq: state.last.seq,
                sub: state.last.sub + 1,
            }
        };
        state.last = id;
        state.events.push(Arc::new(HubEvent {
            id,
            kind: event.kind(),
            json,
            event,
        }));
        let n = state.events.len() as u64;
        drop(state);
        self.changed.send_replace(n);
    }

    /// Marks the drive ended: followers read what is left and go on from the store.
    pub(crate) fn finish(&self) {
        self.lock().done = true;
        self.changed.send_modify(|n| *n += 1);
    }

    /// True once the drive ended.
    pub(crate) fn is_done(&self) -> bool {
        self.lock().done
    }

    /// Gives the hub its drive's cancellation.
    pub(crate) fn set_cancel(&self, cancel: CancellationToken) {
        let _ = self.cancel.set(cancel);
    }

    /// Cancels the drive (it stops at its next await point, checkpointed).
    pub(crate) fn cancel(&self) {
        if let Some(c) = self.cancel.get() {
            c.cancel();
        }
    }

    /// Stops the drive without ending the run: it is left at its last checkpoint, its lease
    /// released, for the next server to resume.
    pub(crate) fn release(&self) {
        self.leave.cancel();
    }

    /// What the drive watches for [`release`](Self::release).
    pub(crate) fn leaving(&self) -> CancellationToken {
        self.leave.clone()
    }

    /// The place of the first event after `after` in the hub.
    pub(crate) fn position_after(&self, after: EventId) -> usize {
        self.lock().events.partition_point(|e| e.id <= after)
    }

    /// The events from place `from` on, and whether the drive ended (after them).
    pub(crate) fn read(&self, from: usize) -> (Vec<Arc<HubEvent>>, bool) {
        let state = self.lock();
        let events = state.events.get(from..).unwrap_or_default().to_vec();
        (events, state.done)
    }

    /// A receiver that wakes when an event comes or the drive ends.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The hubs of the runs this process drives, by run id.
#[derive(Debug, Default)]
pub(crate) struct Hubs {
    live: Mutex<HashMap<String, Arc<RunHub>>>,
    /// Bumped whenever a drive begins.
    began: watch::Sender<u64>,
}

impl Hubs {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<RunHub>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hub of the latest drive of `run_id` in this process, if it is held.
    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<RunHub>> {
        self.lock().get(run_id).cloned()
    }

    /// Holds `hub` as the latest drive of `run_id`.
    pub(crate) fn insert(&self, run_id: &str, hub: Arc<RunHub>) {
        self.lock().insert(run_id.to_owned(), hub);
        self.began.send_modify(|n| *n += 1);
    }

    /// A receiver that wakes whenever a drive begins.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.began.subscribe()
    }

    /// Lets go of `hub` a while after its drive ended (unless a later drive replaced it).
    pub(crate) fn release_later(self: &Arc<Self>, run_id: String, hub: Arc<RunHub>) {
        let hubs = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(LINGER).await;
            let mut live = hubs.lock();
            if live.get(&run_id).is_some_and(|h| Arc::ptr_eq(h, &hub)) {
                live.remove(&run_id);
            }
        });
    }

    /// The hubs whose drives have not ended.
    pub(crate) fn running(&self) -> Vec<(String, Arc<RunHub>)> {
        self.lock()
            .iter()
            .filter(|(_, h)| !h.is_done())
            .map(|(id, h)| (id.clone(), Arc::clone(h)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str, path: &str) -> RunEvent {
        RunEvent::TextDelta {
            text: t.into(),
            agent_path: path.into(),
            run_id: None,
        }
    }

    fn step(n: u32, path: &str) -> RunEvent {
        RunEvent::StepStarted {
            step: n,
            agent_path: path.into(),
            run_id: None,
        }
    }

    #[test]
    fn recorded_events_take_the_history_numbers_and_streamed_text_places_after_them() {
        let hub = RunHub::new(4, Default::default());
        hub.push(text("a", "agent"));
        hub.push(step(1, "agent"));
        hub.push(text("b", "agent"));
        hub.push(step(1, "agent/helper"));
        hub.push(step(2, "agent"));
        let (events, done) = hub.read(0);
        let ids: Vec<String> = events.iter().map(|e| e.id.to_string()).collect();
        // A sub-agent's event is in the run's history too.
        assert_eq!(ids, ["4.1", "5", "5.1", "6", "7"]);
        assert!(!done);
        assert_eq!(hub.position_after("5.1".parse().unwrap()), 3);
        assert_eq!(hub.position_after(EventId::recorded(6)), 4);
        assert_eq!(hub.position_after(EventId::recorded(4)), 0);
        assert_eq!(hub.position_after(EventId::recorded(9)), 5);
        let json: serde_json::Value = serde_json::from_str(&events[1].json).unwrap();
        assert_eq!(json["type"], "step_started");
        assert!(json["at_ms"].as_i64().unwrap() > 1_700_000_000_000);
        assert_eq!(with_time("{}".into(), 5), r#"{"at_ms":5}"#);
        hub.finish();
        assert!(hub.read(5).1);
        assert!(hub.read(9).0.is_empty());
    }
}
