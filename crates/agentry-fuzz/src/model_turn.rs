//! One streamed model turn of a real provider client against the canned server: what the three
//! provider stream targets share.
//!
//! The input's first byte picks the answer (mostly `200` with an event stream; else a failure
//! status with an error body, or a `200` that is not a stream), its second byte where the body
//! is cut in two pieces (each sent as its own chunk, so events and UTF-8 characters split across
//! reads), and the rest is the body.

use crate::support::{Canned, CannedServer, PATIENCE, exclusive, runtime};
use agentry::{History, Message, Model, ModelError, ModelEvent, ModelRequest, ToolSpec};
use futures::StreamExt;
use std::sync::OnceLock;

/// The answers the first byte picks from: a stream half the time.
const ANSWERS: &[(u16, &str)] = &[
    (200, "text/event-stream"),
    (200, "text/event-stream"),
    (200, "text/event-stream"),
    (200, "text/event-stream"),
    (200, "text/event-stream; charset=utf-8"),
    (200, "text/event-stream"),
    (200, "text/event-stream"),
    (200, "text/event-stream"),
    (200, "application/json"),
    (400, "application/json"),
    (401, "application/json"),
    (403, "application/json"),
    (404, "application/json"),
    (408, "text/plain"),
    (413, "application/json"),
    (422, "application/json"),
    (429, "application/json"),
    (500, "application/json"),
    (502, "text/html"),
    (503, "application/json"),
    (529, "application/json"),
];

/// The request of every turn: a question and a tool, so that tool calls make sense.
fn request() -> &'static ModelRequest {
    static REQUEST: OnceLock<ModelRequest> = OnceLock::new();
    REQUEST.get_or_init(|| {
        let mut history = History::new();
        history.push(Message::user("What is the weather in Lisbon?"));
        let mut request = ModelRequest::new(history);
        request.tools = vec![ToolSpec {
            name: "get_weather".into(),
            description: "Current weather for a city".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }),
        }]
        .into();
        request
    })
}

/// Streams one turn of `model`, whose server answers as `data` says, and checks how it ends.
pub(crate) fn turn(model: &dyn Model, data: &[u8]) {
    let Some((&answer, rest)) = data.split_first() else {
        return;
    };
    let (split, body) = match rest.split_first() {
        Some((&split, body)) => (split, body),
        None => (0, rest),
    };
    let (status, content_type) = ANSWERS[usize::from(answer) % ANSWERS.len()];
    let at = usize::from(split) * body.len() / 255;
    let _one_at_a_time = exclusive();
    CannedServer::get().answer(Canned {
        status,
        content_type,
        pieces: vec![body[..at].to_vec(), body[at..].to_vec()],
    });
    let items = runtime()
        .block_on(async {
            tokio::time::timeout(PATIENCE, model.stream(request()).collect::<Vec<_>>()).await
        })
        .expect("a turn whose server answered in full ends in time");
    crate::support::debug("model turn", &items);
    check(&items);
}

/// A turn ends with its finish or an error, once, and nothing follows either.
fn check(items: &[Result<ModelEvent, ModelError>]) {
    for (i, item) in items.iter().enumerate() {
        let last = i + 1 == items.len();
        match item {
            Err(error) => assert!(last, "events after the error {error:?}: {items:?}"),
            Ok(ModelEvent::Finish(_)) => assert!(last, "events after the finish: {items:?}"),
            Ok(_) => {}
        }
    }
    assert!(
        matches!(items.last(), Some(Err(_) | Ok(ModelEvent::Finish(_)))),
        "a turn that ends with neither its finish nor an error: {items:?}"
    );
}
