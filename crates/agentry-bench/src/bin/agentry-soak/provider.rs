//! The soak's model provider: an OpenAI-compatible chat-completions server on 127.0.0.1 that
//! answers every run the same way (a `work` call per step, then `done`), and injects faults at
//! random: 500s and 429s (retried by the client), a slow first byte, a stream cut in the middle
//! of a tool call and a garbage body (each fails the turn, and the run is resumed later).

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The faults the provider injects, by name, with how often each fired.
#[derive(Default)]
pub(crate) struct Faults {
    fired: Mutex<BTreeMap<&'static str, u64>>,
    requests: AtomicU64,
    seed: AtomicU64,
}

impl Faults {
    fn fire(&self, name: &'static str) {
        *self.fired.lock().unwrap().entry(name).or_default() += 1;
    }

    /// The faults that fired, by name, and the requests answered.
    pub(crate) fn report(&self) -> (BTreeMap<&'static str, u64>, u64) {
        (
            self.fired.lock().unwrap().clone(),
            self.requests.load(Ordering::Relaxed),
        )
    }

    /// A number in 0..100, from a xorshift sequence seeded once.
    fn roll(&self) -> u64 {
        let mut x = self
            .seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 100
    }
}

#[derive(Clone)]
struct Provider {
    key: Arc<str>,
    steps: usize,
    faults: Arc<Faults>,
}

/// Serves the provider on a free port of 127.0.0.1: its base URL and its fault counts.
pub(crate) async fn serve(key: &str, steps: usize, seed: u64) -> (String, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    faults.seed.store(seed.max(1), Ordering::Relaxed);
    let state = Provider {
        key: key.into(),
        steps,
        faults: faults.clone(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding the soak's provider");
    let addr = listener.local_addr().expect("the provider's address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), faults)
}

async fn complete(State(p): State<Provider>, headers: HeaderMap, body: String) -> Response {
    let request_no = p.faults.requests.fetch_add(1, Ordering::Relaxed);
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {}", p.key));
    if !authorized {
        p.faults
            .fire("unauthorized (a bug: the key did not arrive)");
        return (StatusCode::UNAUTHORIZED, "{}").into_response();
    }
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let roll = p.faults.roll();
    match roll {
        0..=5 => {
            p.faults.fire("http 500");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            )
                .into_response();
        }
        6..=9 => {
            p.faults.fire("http 429");
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "0")],
                r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
            )
                .into_response();
        }
        10..=11 => {
            p.faults.fire("slow first byte");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        _ => {}
    }
    let (chunks, cut) = if results < p.steps {
        let call = format!("call_{request_no}_{results}");
        let args = json!({"n": results}).to_string();
        let (head, tail) = args.split_at(args.len() / 2);
        let chunks = vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": call, "type": "function", "function": {"name": "work", "arguments": head}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ];
        (chunks, roll == 12)
    } else {
        let chunks = vec![
            chunk(json!({"role": "assistant", "content": "do"}), None),
            chunk(json!({"content": "ne"}), None),
            chunk(json!({}), Some("stop")),
        ];
        (chunks, false)
    };
    if roll == 13 {
        p.faults.fire("garbage body");
        return sse(vec![Ok("data: {this is not json\n\n".to_owned())]);
    }
    let mut body: Vec<Result<String, std::io::Error>> = Vec::new();
    if cut {
        p.faults.fire("stream cut mid tool call");
        body.push(Ok(chunks[0].clone()));
        body.push(Err(std::io::Error::other("cut")));
        return sse(body);
    }
    body.extend(chunks.into_iter().map(Ok));
    body.push(Ok(format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})
    )));
    sse(body)
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "model": "soak",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

fn sse(parts: Vec<Result<String, std::io::Error>>) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(futures::stream::iter(parts)))
        .expect("a response")
}
