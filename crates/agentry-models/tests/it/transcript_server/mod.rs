//! An in-process HTTP server on 127.0.0.1 that plays back recorded server-sent-event transcripts,
//! one scripted reply per request, each body sent chunk by chunk with a short pause between
//! chunks so the client receives them as separate reads.
#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, Request, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The pause between two chunks of a body.
const GAP: Duration = Duration::from_millis(5);

/// How a body ends once its chunks are sent.
#[derive(Clone, Debug)]
enum Ending {
    /// The body ends cleanly (the chunked encoding is terminated).
    Close,
    /// The connection is cut: the body fails, and the server aborts the response.
    Abort,
    /// `chunk` is sent again every `every` until `total` has passed.
    Trickle {
        chunk: Bytes,
        every: Duration,
        total: Duration,
    },
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    status: StatusCode,
    headers: Vec<(String, String)>,
    chunks: Vec<Bytes>,
    ending: Ending,
}

impl Reply {
    /// A `200 text/event-stream` reply whose body is `chunks`, in order.
    pub fn sse<C: Into<Bytes>>(chunks: impl IntoIterator<Item = C>) -> Reply {
        Reply {
            status: StatusCode::OK,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: chunks.into_iter().map(Into::into).collect(),
            ending: Ending::Close,
        }
    }

    /// A reply with `status` and a JSON `body` sent in one piece.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).expect("a valid status"),
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
            ending: Ending::Close,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Cuts the connection after the chunks instead of ending the body cleanly.
    pub fn then_abort(mut self) -> Reply {
        self.ending = Ending::Abort;
        self
    }

    /// Keeps sending `chunk` every `every` for `total` after the chunks.
    pub fn then_trickle(
        mut self,
        chunk: impl Into<Bytes>,
        every: Duration,
        total: Duration,
    ) -> Reply {
        self.ending = Ending::Trickle {
            chunk: chunk.into(),
            every,
            total,
        };
        self
    }
}

/// `text` cut into pieces that each end just after `marker` (the last piece takes the rest).
pub fn split_after(text: &str, marker: &str) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let (piece, tail) = rest.split_at(at + marker.len());
        pieces.push(Bytes::copy_from_slice(piece.as_bytes()));
        rest = tail;
    }
    if !rest.is_empty() {
        pieces.push(Bytes::copy_from_slice(rest.as_bytes()));
    }
    pieces
}

/// `bytes` cut at the given byte offsets, which need not fall on character boundaries.
pub fn split_at_bytes(bytes: &[u8], offsets: &[usize]) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for &end in offsets {
        pieces.push(Bytes::copy_from_slice(&bytes[start..end]));
        start = end;
    }
    pieces.push(Bytes::copy_from_slice(&bytes[start..]));
    pieces
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The path, query included.
    pub path: String,
    /// The JSON body.
    pub body: serde_json::Value,
    /// When it arrived.
    pub at: Instant,
}

/// What the handler shares with the test.
struct Shared {
    replies: Vec<Reply>,
    hits: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    /// Set when a body stream is dropped before it sent everything it was scripted to send.
    cut_short: AtomicBool,
    cut_short_notify: Notify,
}

/// A running transcript server; stopped when dropped.
pub struct TranscriptServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for TranscriptServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TranscriptServer {
    /// Starts a server that answers request number `n` (from 0) with `replies[n]`, or with the
    /// last reply once they run out.
    pub async fn start(replies: Vec<Reply>) -> TranscriptServer {
        assert!(!replies.is_empty(), "a server needs at least one reply");
        let shared = Arc::new(Shared {
            replies,
            hits: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            cut_short: AtomicBool::new(false),
            cut_short_notify: Notify::new(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let listener = listener.tap_io(|tcp| {
            // Each chunk leaves at once rather than waiting to be coalesced with the next.
            let _ = tcp.set_nodelay(true);
        });
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the server runs");
        });
        TranscriptServer { url, shared, task }
    }

    /// Starts a server that answers every request with `reply`.
    pub async fn one(reply: Reply) -> TranscriptServer {
        TranscriptServer::start(vec![reply]).await
    }

    /// The base URL of the OpenAI clients: `http://127.0.0.1:PORT/v1`.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// How many requests arrived.
    pub fn hits(&self) -> usize {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// The requests that arrived, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Whether a body stream is dropped before its end within `limit` (a client that went away).
    pub async fn body_cut_short_within(&self, limit: Duration) -> bool {
        let notified = self.shared.cut_short_notify.notified();
        if self.shared.cut_short.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::timeout(limit, notified).await.is_ok()
            || self.shared.cut_short.load(Ordering::SeqCst)
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request<Body>) -> Response {
    let n = shared.hits.fetch_add(1, Ordering::SeqCst);
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    shared.seen.lock().unwrap().push(Seen {
        path,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        at: Instant::now(),
    });
    let reply = shared.replies[n.min(shared.replies.len() - 1)].clone();
    let mut response = Response::new(body_of(&reply, shared.clone()));
    *response.status_mut() = reply.status;
    for (name, value) in &reply.headers {
        response.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
            HeaderValue::from_str(value).expect("a header value"),
        );
    }
    response
}

/// Notes, when dropped before `finished` is set, that the body was cut short.
struct BodyGuard {
    shared: Arc<Shared>,
    finished: bool,
}

impl BodyGuard {
    fn mark_finished(&mut self) {
        self.finished = true;
    }
}

impl Drop for BodyGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.cut_short.store(true, Ordering::SeqCst);
            self.shared.cut_short_notify.notify_waiters();
        }
    }
}

type Chunk = Result<Bytes, std::io::Error>;

fn body_of(reply: &Reply, shared: Arc<Shared>) -> Body {
    let mut items: Vec<(Duration, Chunk)> = Vec::new();
    for (i, chunk) in reply.chunks.iter().enumerate() {
        let pause = if i == 0 { Duration::ZERO } else { GAP };
        items.push((pause, Ok(chunk.clone())));
    }
    match &reply.ending {
        Ending::Close => {}
        Ending::Abort => items.push((
            GAP,
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "scripted cut",
            )),
        )),
        Ending::Trickle {
            chunk,
            every,
            total,
        } => {
            let times = (total.as_millis() / every.as_millis().max(1)) as usize;
            items.extend((0..times).map(|_| (*every, Ok(chunk.clone()))));
        }
    }
    let guard = BodyGuard {
        shared,
        finished: false,
    };
    let stream = futures::stream::unfold(
        (items.into_iter(), guard),
        |(mut items, mut guard)| async move {
            match items.next() {
                Some((pause, chunk)) => {
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    Some((chunk, (items, guard)))
                }
                None => {
                    guard.mark_finished();
                    None
                }
            }
        },
    );
    Body::from_stream(stream)
}
