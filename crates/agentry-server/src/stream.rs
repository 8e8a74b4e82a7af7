//! A run's events as Server-Sent Events: from the store up to where this process's hub of the
//! run begins, then live from the hub; for a run another process drives, from the store as it
//! saves them. The stream follows the run through pauses and ends when the run ends.

use crate::api::StreamEvents;
use crate::error::{ApiError, ErrorBody};
use crate::event_id::EventId;
use crate::extract::QueryArgs;
use crate::state::AppState;
use agentry::{RunEvent, StopReason, StoredEvent};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use std::convert::Infallible;
use std::time::Duration;

/// How often a stream says it is alive while nothing happens.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The run's events as Server-Sent Events, resumable with `Last-Event-ID`.
///
/// Each event's `event` field is its kind (`text_delta`, `tool_started`, `run_finished`, ...),
/// its `data` the event's JSON with the time it happened (`at_ms`, milliseconds since the Unix
/// epoch), and its `id` where it stands: events the run's history records
/// have their number there (sub-agents' events among them), the others (streamed text) a place
/// after it.
/// A client that reconnects with the last id it saw gets every recorded event after it exactly
/// once. The stream follows the run through pauses for approval and ends when it ends.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/events", tag = "runs",
    params(
        ("run_id" = String, Path, description = "The run"),
        ("Last-Event-ID" = Option<String>, Header, description = "Go on after this event"),
        StreamEvents,
    ),
    responses(
        (status = 200, description = "Server-Sent Events", content_type = "text/event-stream", body = String),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
    ),
)]
pub(crate) async fn run_events(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    QueryArgs(q): QueryArgs<StreamEvents>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or(q.after);
    let after = match after.as_deref().map(str::trim) {
        None | Some("") => EventId::default(),
        Some(id) => id.parse().map_err(ApiError::bad_request)?,
    };
    if state.hubs.get(&run_id).is_none() {
        state.load(&run_id).await?;
    }
    let until = q.until.map(EventId::recorded);
    Ok(Sse::new(follow(state, run_id, after, until))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// True for an event after which the run goes no further without a new request: it finished,
/// failed, was cancelled or stopped (a pause is not an end; a sub-agent's end is not the run's).
fn ends_run(kind: &str, event: impl FnOnce() -> Option<RunEvent>) -> bool {
    if !matches!(kind, "run_failed" | "run_finished") {
        return false;
    }
    match event() {
        Some(event) if event.is_sub_agent() => false,
        Some(RunEvent::RunFinished {
            stop: StopReason::AwaitingApproval { .. },
            ..
        }) => false,
        _ => true,
    }
}

fn sse(id: EventId, kind: &str, json: &str) -> Event {
    Event::default().id(id.to_string()).event(kind).data(json)
}

fn stored_sse(state: &AppState, e: &StoredEvent) -> (Event, bool) {
    let event = RunEvent::from_recorded(&e.event).ok();
    let ends = ends_run(&e.event.kind, || event.clone());
    let json = match &event {
        Some(ev) => serde_json::to_value(ev).unwrap_or_default(),
        None => {
            let mut data = e.event.data.clone();
            if let serde_json::Value::Object(fields) = &mut data {
                fields.insert("type".into(), e.event.kind.clone().into());
            }
            state.redact(data)
        }
    };
    let mut json = crate::hub::with_time(json.to_string(), e.event.at_ms);
    if let Some(cost) = event
        .as_ref()
        .and_then(|ev| crate::pricing::step_cost(&state.prices, ev))
    {
        json = crate::hub::with_field(json, "cost_usd", cost);
    }
    (sse(EventId::recorded(e.seq), &e.event.kind, &json), ends)
}

/// The stream: what the store holds after `after`, then the hub while this process drives the
/// run, then the store again, until the run ends, the event `until` was sent, or the server
/// shuts down.
fn follow(
    state: AppState,
    run_id: String,
    mut after: EventId,
    until: Option<EventId>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let past = move |id: EventId| until.is_some_and(|until| id > until);
    async_stream::stream! {
        let shutdown = state.shutdown.clone();
        'follow: loop {
            let hub = state.hubs.get(&run_id);
            if let Some(hub) = &hub {
                // What the store holds from before this drive began (a pause or a cancel the
                // run went on from, so no end of it).
                while after.seq < hub.base {
                    match state.store.events_page(&run_id, after.seq, state.events_page).await {
                        Ok(events) => {
                            let last_page = events.len() < state.events_page;
                            for e in events.iter().filter(|e| e.seq <= hub.base) {
                                after = EventId::recorded(e.seq);
                                if past(after) {
                                    break 'follow;
                                }
                                yield Ok(stored_sse(&state, e).0);
                                if until == Some(after) {
                                    break 'follow;
                                }
                            }
                            if last_page {
                                break;
                            }
                        }
                        Err(error) => {
                            tracing::warn!(run_id, %error, "a run's events could not be read");
                            break 'follow;
                        }
                    }
                }
                after = after.max(EventId::recorded(hub.base));
                let mut changed = hub.watch();
                let mut at = hub.position_after(after);
                loop {
                    let (events, done) = hub.read(at);
                    at += events.len();
                    let mut ended = false;
                    for e in &events {
                        after = e.id;
                        if past(after) {
                            break 'follow;
                        }
                        ended |= ends_run(e.kind, || Some(e.event.clone()));
                        yield Ok(sse(e.id, e.kind, &e.json));
                        if until == Some(after) {
                            break 'follow;
                        }
                    }
                    if ended {
                        break 'follow;
                    }
                    if done {
                        break;
                    }
                    tokio::select! {
                        r = changed.changed() => if r.is_err() { break },
                        () = shutdown.cancelled() => break 'follow,
                    }
                }
            }
            // No drive here, or it ended without ending the run (it paused): what the store
            // holds beyond it (another process may drive the run).
            // A page at a time, so a long history is never held whole.
            loop {
                match state.store.events_page(&run_id, after.seq, state.events_page).await {
                    Ok(events) => {
                        let last_page = events.len() < state.events_page;
                        let mut ended = false;
                        for e in &events {
                            after = EventId::recorded(e.seq);
                            if past(after) {
                                break 'follow;
                            }
                            let (event, ends) = stored_sse(&state, e);
                            ended |= ends;
                            yield Ok(event);
                            if until == Some(after) {
                                break 'follow;
                            }
                        }
                        if ended {
                            break 'follow;
                        }
                        if last_page {
                            break;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(run_id, %error, "a run's events could not be read");
                        break 'follow;
                    }
                }
            }
            // Nothing new: wait for a new drive of the run here, or look in the store again.
            let mut drives = state.hubs.watch();
            let wait = tokio::time::sleep(state.poll);
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    () = &mut wait => break,
                    r = drives.changed() => {
                        let now = state.hubs.get(&run_id);
                        let new_drive = match (&hub, &now) {
                            (None, Some(_)) => true,
                            (Some(a), Some(b)) => !std::sync::Arc::ptr_eq(a, b),
                            _ => false,
                        };
                        if new_drive || r.is_err() {
                            break;
                        }
                    }
                    () = shutdown.cancelled() => break 'follow,
                }
            }
        }
    }
}
