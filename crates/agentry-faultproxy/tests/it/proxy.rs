//! The proxy itself, over plain TCP against an upstream of the test's own: each fault does
//! what it says to the bytes, and the proxy counts what it did.

use agentry_faultproxy::{Fault, FaultProxy, Injected, Plan};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An upstream that reads HTTP requests (head and `Content-Length` body) on kept-alive
/// connections and answers each one with `answer`, written in two pieces 50 ms apart; it
/// closes the connection after an answer without `content-length`.
struct Upstream {
    addr: std::net::SocketAddr,
    requests: Arc<AtomicUsize>,
}

impl Upstream {
    async fn start(answer: &'static str) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut piece = [0u8; 4096];
                    loop {
                        let Some(end) = complete(&buf) else {
                            match conn.read(&mut piece).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&piece[..n]),
                            }
                            continue;
                        };
                        buf.drain(..end);
                        counted.fetch_add(1, Ordering::SeqCst);
                        let (first, second) = answer.split_at(answer.len() / 2);
                        if conn.write_all(first.as_bytes()).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if conn.write_all(second.as_bytes()).await.is_err() {
                            return;
                        }
                        if !answer.to_ascii_lowercase().contains("content-length") {
                            return;
                        }
                    }
                });
            }
        });
        Upstream { addr, requests }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// The end of the first whole request in `buf`, if there is one.
fn complete(buf: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(buf);
    let head_end = text.find("\r\n\r\n")? + 4;
    let length = text[..head_end]
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    (buf.len() >= head_end + length).then_some(head_end + length)
}

fn post(body: &str) -> Vec<u8> {
    format!(
        "POST /call HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends `request` on a new connection and reads until the proxy closes it, or resets it, or
/// `quiet` passes without a byte: what arrived, and how it ended.
async fn exchange(proxy: &FaultProxy, request: &[u8], quiet: Duration) -> (String, Ending) {
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(request).await.unwrap();
    read_until_end(&mut conn, quiet).await
}

#[derive(Debug, PartialEq, Eq)]
enum Ending {
    Closed,
    Reset,
    Silent,
}

async fn read_until_end(conn: &mut TcpStream, quiet: Duration) -> (String, Ending) {
    let mut got = Vec::new();
    let mut piece = [0u8; 4096];
    let ending = loop {
        match tokio::time::timeout(quiet, conn.read(&mut piece)).await {
            Err(_) => break Ending::Silent,
            Ok(Ok(0)) => break Ending::Closed,
            Ok(Ok(n)) => got.extend_from_slice(&piece[..n]),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break Ending::Reset,
            Ok(Err(e)) => panic!("unexpected read error: {e}"),
        }
    };
    (String::from_utf8_lossy(&got).into_owned(), ending)
}

const STREAM: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"arguments\":\"{\\\"ci\"}\n\ndata: {\"arguments\":\"ty\\\":\\\"Lisbon\\\"}\"}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn statuses_are_answered_in_place_and_never_reach_the_upstream() {
    let upstream = Upstream::start("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
    let plan = Plan::first([
        Fault::rate_limited(Duration::from_millis(1500)),
        Fault::status(500),
    ]);
    let proxy = FaultProxy::start(upstream.addr, plan).await.unwrap();
    let quiet = Duration::from_secs(5);

    let (answer, ending) = exchange(&proxy, &post("{}"), quiet).await;
    assert_eq!(ending, Ending::Closed, "{answer}");
    assert!(
        answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
        "{answer}"
    );
    assert!(answer.contains("retry-after: 2\r\n") && answer.contains("retry-after-ms: 1500\r\n"));
    assert!(answer.contains("connection: close\r\n"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["error"]["type"], "rate_limit_error");

    let (answer, _) = exchange(&proxy, &post("{}"), quiet).await;
    assert!(
        answer.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
        "{answer}"
    );
    assert!(!answer.contains("retry-after"));
    assert_eq!(upstream.requests(), 0, "the upstream was never asked");

    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(&post("{}")).await.unwrap();
    let mut answer = vec![0u8; 64];
    let n = conn.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200 OK"));
    assert_eq!(upstream.requests(), 1);
    assert_eq!(proxy.connections(), 3);
    assert_eq!(
        proxy.injected(),
        [
            Injected {
                connection: 0,
                index: 0,
                fault: Fault::rate_limited(Duration::from_millis(1500))
            },
            Injected {
                connection: 1,
                index: 1,
                fault: Fault::status(500)
            },
        ]
    );
}

#[tokio::test]
async fn an_answer_is_cut_stalled_or_reset_right_after_its_marker() {
    let upstream = Upstream::start(STREAM).await;
    let marker = r#"\"Lis"#;
    let upto = &STREAM[..STREAM.find(marker).unwrap() + marker.len()];
    let quiet = Duration::from_millis(400);
    for (fault, expected) in [
        (Fault::cut_after(marker), Ending::Closed),
        (Fault::stall_after(marker), Ending::Silent),
        (Fault::reset_after(marker), Ending::Reset),
    ] {
        let proxy = FaultProxy::start(upstream.addr, Plan::always(fault.clone()))
            .await
            .unwrap();
        let (answer, ending) = exchange(&proxy, &post("{}"), quiet).await;
        assert_eq!(ending, expected, "{fault}: {answer}");
        assert_eq!(answer, upto, "{fault}: exactly up to the marker's end");
        assert_eq!(proxy.faults(), [fault]);
    }
    // A marker that never comes: the answer passes whole, and nothing counts as injected.
    let proxy = FaultProxy::start(upstream.addr, Plan::always(Fault::cut_after("Porto")))
        .await
        .unwrap();
    let (answer, ending) = exchange(&proxy, &post("{}"), quiet).await;
    assert_eq!((answer.as_str(), ending), (STREAM, Ending::Closed));
    assert_eq!(proxy.faults_injected(), 0);
}

#[tokio::test]
async fn garbage_stall_and_reset_answer_in_place() {
    let upstream = Upstream::start(STREAM).await;
    let quiet = Duration::from_millis(400);

    let proxy = FaultProxy::start(upstream.addr, Plan::always(Fault::Garbage(48)))
        .await
        .unwrap();
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(&post("{}")).await.unwrap();
    let mut junk = Vec::new();
    conn.read_to_end(&mut junk).await.unwrap();
    assert_eq!(junk.len(), 48);
    assert!(!junk.starts_with(b"HTTP/"));

    let proxy = FaultProxy::start(upstream.addr, Plan::always(Fault::Reset))
        .await
        .unwrap();
    let (answer, ending) = exchange(&proxy, &post("{}"), quiet).await;
    assert_eq!((answer.as_str(), ending), ("", Ending::Reset));

    let proxy = FaultProxy::start(upstream.addr, Plan::always(Fault::Stall))
        .await
        .unwrap();
    let (answer, ending) = exchange(&proxy, &post("{}"), quiet).await;
    assert_eq!((answer.as_str(), ending), ("", Ending::Silent));
    assert_eq!(proxy.faults(), [Fault::Stall]);

    // A request that is still arriving is not answered early: the fault waits for its body.
    let proxy = FaultProxy::start(upstream.addr, Plan::always(Fault::status(503)))
        .await
        .unwrap();
    let request = post(r#"{"a long body": true}"#);
    let (head, body) = request.split_at(request.len() - 5);
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(head).await.unwrap();
    let mut early = [0u8; 16];
    assert!(
        tokio::time::timeout(Duration::from_millis(200), conn.read(&mut early))
            .await
            .is_err(),
        "answered before the body arrived"
    );
    assert_eq!(proxy.faults_injected(), 0);
    conn.write_all(body).await.unwrap();
    let (answer, ending) = read_until_end(&mut conn, quiet).await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert_eq!(ending, Ending::Closed);
    assert_eq!(upstream.requests(), 0);
}

#[tokio::test]
async fn a_slow_first_byte_is_held_then_the_answer_passes_whole() {
    let upstream = Upstream::start(STREAM).await;
    let wait = Duration::from_millis(300);
    let proxy = FaultProxy::start(upstream.addr, Plan::first([Fault::SlowFirstByte(wait)]))
        .await
        .unwrap();
    let started = Instant::now();
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(&post("{}")).await.unwrap();
    let mut first = [0u8; 1];
    conn.read_exact(&mut first).await.unwrap();
    assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
    let (rest, ending) = read_until_end(&mut conn, Duration::from_secs(5)).await;
    assert_eq!(format!("{}{rest}", first[0] as char), STREAM);
    assert_eq!(ending, Ending::Closed);
    assert_eq!(proxy.faults(), [Fault::SlowFirstByte(wait)]);
}

#[tokio::test]
async fn a_request_scoped_plan_picks_out_matching_requests_on_kept_alive_connections() {
    let upstream = Upstream::start("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
    let plan = Plan::first([Fault::status(503)]).on_requests_containing("tools/call");
    let proxy = FaultProxy::start(upstream.addr, plan).await.unwrap();
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut answer = [0u8; 512];

    conn.write_all(&post(r#"{"method":"tools/list"}"#))
        .await
        .unwrap();
    let n = conn.read(&mut answer).await.unwrap();
    let mut first = String::from_utf8_lossy(&answer[..n]).into_owned();
    while !first.ends_with("ok") {
        let n = conn.read(&mut answer).await.unwrap();
        first.push_str(&String::from_utf8_lossy(&answer[..n]));
    }
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");

    // The same connection: the matching request is answered by the proxy.
    conn.write_all(&post(r#"{"method":"tools/call"}"#))
        .await
        .unwrap();
    let (second, ending) = read_until_end(&mut conn, Duration::from_secs(5)).await;
    assert!(second.starts_with("HTTP/1.1 503 "), "{second}");
    assert_eq!(ending, Ending::Closed);

    // The next matching request, on a new connection, passes.
    let mut conn = TcpStream::connect(proxy.addr()).await.unwrap();
    conn.write_all(&post(r#"{"method":"tools/call"}"#))
        .await
        .unwrap();
    let n = conn.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200 OK"));

    assert_eq!(upstream.requests(), 2);
    assert_eq!(proxy.requests_matched(), 2);
    assert_eq!(proxy.connections(), 2);
    assert_eq!(
        proxy.injected(),
        [Injected {
            connection: 0,
            index: 0,
            fault: Fault::status(503)
        }]
    );
}

#[tokio::test]
async fn an_upstream_that_is_down_closes_the_client_connection() {
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = FaultProxy::start(down, Plan::pass()).await.unwrap();
    let (answer, ending) = exchange(&proxy, &post("{}"), Duration::from_secs(5)).await;
    assert_eq!((answer.as_str(), ending), ("", Ending::Closed));
    assert_eq!(proxy.connections(), 1);
}
