//! What a webhook answers, read as a webhook's answer (a 2xx with a JSON object or nothing;
//! anything else a non-blocking error) and then as the decision of its event, on each event
//! kind.
//!
//! Input: a byte that picks the event, a byte that picks the HTTP status, then the body.

use crate::hook_run::{EVENTS, run_with_handler};
use crate::support::{Canned, CannedServer, exclusive};
use serde_json::json;

/// The statuses the second byte picks from.
const STATUSES: [u16; 12] = [200, 200, 200, 200, 200, 201, 202, 400, 404, 429, 500, 503];

/// Runs an agent whose one webhook answers as `data` says; panics if the run does not end in
/// time.
pub fn run(data: &[u8]) {
    let [pick, status, body @ ..] = data else {
        return;
    };
    let event = EVENTS[usize::from(*pick) % EVENTS.len()];
    let status = STATUSES[usize::from(*status) % STATUSES.len()];
    let _one_at_a_time = exclusive();
    let server = CannedServer::get();
    server.answer(Canned {
        status,
        content_type: "application/json",
        pieces: vec![body.to_vec()],
    });
    run_with_handler(
        event,
        json!({"type": "http", "url": format!("{}/hook", server.url()), "timeout": 5}),
    );
}
