//! W7: agents behind HTTP. `agentry serve`'s server runs in a child process (this binary with
//! `--serve-http`, on a SQLite store, so its memory is its own) and a load generator here
//! measures: runs started per second; the time from a request to the run's first SSE event,
//! p50 and p99; one run followed by many SSE clients at once, and the server's memory per open
//! stream; many runs at once, each followed by a client; and the AI SDK UI message stream door
//! beside the AI SDK's own Node server streaming the same scripted answer (`--peer`).

use agentry::prelude::*;
use agentry::{Message, ScriptedTurn};
use futures::StreamExt;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Says back what it is told in four pieces (the peer streams the same).
fn echo() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let said = req
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::User { .. }))
            .map(|m| m.text().into_owned())
            .unwrap_or_default();
        ScriptedTurn::new().with_text_deltas(["echo", ": ", &said, " (turn 1)"])
    });
    Agent::builder("echo")
        .model(model)
        .build()
        .expect("the echo agent")
}

#[derive(Deserialize, JsonSchema)]
struct Wait {
    ms: u64,
}

/// Ten steps, each a tool call that takes 20 ms after a line of text, then an answer: a run
/// that lasts long enough for many clients to follow it.
fn ticker() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let done = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        if done < 10 {
            ScriptedTurn::new()
                .with_text_deltas(["tick ", &done.to_string()])
                .with_tool_call("wait", json!({"ms": 20}))
        } else {
            ScriptedTurn::new().with_text_deltas(["do", "ne"])
        }
    });
    Agent::builder("ticker")
        .model(model)
        .tool(tool("wait", "Waits.", |a: Wait, _c: ToolCtx| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok("waited")
        }))
        .build()
        .expect("the ticker agent")
}

/// The child: serves `echo` and `ticker` on 127.0.0.1 (a SQLite store in a temporary
/// directory, or the in-memory store), prints `port N`, and serves until stdin closes.
pub(crate) async fn serve_child(memory: bool) {
    let dir = std::env::temp_dir().join(format!("agentry-bench-w7-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let runtime = if memory {
        Runtime::new().store(agentry::MemoryStore::new())
    } else {
        let store = agentry_store::SqliteStore::open(dir.join("runs.db"))
            .await
            .expect("the store");
        Runtime::new().store(store)
    };
    let server = agentry_server::Server::builder(runtime)
        .agent(echo())
        .agent(ticker())
        .build()
        .expect("the server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    println!("port {}", listener.local_addr().expect("an address").port());
    let stdin_closed = async {
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await;
    };
    let _ = server.serve(listener, stdin_closed).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A child process serving on a port it printed.
struct Served {
    child: Child,
    port: u16,
}

impl Served {
    fn start(mut command: Command) -> Served {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server process starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("its port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Served { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn rss_kib(&self) -> u64 {
        crate::measure::process_status_kib(&self.child.id().to_string(), "VmRSS:")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// Runs `n` requests `concurrency` at a time; each returns its latency of interest.
async fn load<F, Fut>(n: usize, concurrency: usize, one: F) -> (Duration, Vec<Duration>)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    let t0 = Instant::now();
    let mut latencies: Vec<Duration> = futures::stream::iter(0..n)
        .map(one)
        .buffer_unordered(concurrency)
        .collect()
        .await;
    latencies.sort();
    (t0.elapsed(), latencies)
}

fn summary(n: usize, wall: Duration, latencies: &[Duration]) -> Value {
    json!({
        "requests": n,
        "per_s": n as f64 / wall.as_secs_f64(),
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
    })
}

/// Reads an SSE response to its end; returns when its first event came, and the whole body.
async fn read_stream(response: reqwest::Response, t0: Instant) -> (Duration, String) {
    let mut first = None;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("the stream reads");
        if first.is_none() && chunk.windows(5).any(|w| w == b"data:") {
            first = Some(t0.elapsed());
        }
        body.extend_from_slice(&chunk);
    }
    (
        first.unwrap_or_else(|| t0.elapsed()),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// Starts a run of `echo` on `input` and follows its events to the end; returns when its first
/// event came (from `t0`) and the stream.
/// Starts a run of `agent` on the server at `base`; its events' path.
async fn start_run(client: &reqwest::Client, base: &str, agent: &str, input: &str) -> String {
    let run: Value = client
        .post(format!("{base}/v1/runs"))
        .json(&json!({"agent": agent, "input": input}))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("a run");
    run["events_url"].as_str().expect("a URL").to_owned()
}

async fn run_and_follow(
    client: &reqwest::Client,
    base: &str,
    input: &str,
    t0: Instant,
) -> (Duration, String) {
    let events = start_run(client, base, "echo", input).await;
    let r = client
        .get(format!("{base}{events}"))
        .send()
        .await
        .expect("a stream");
    let (first, body) = read_stream(r, t0).await;
    assert!(body.contains("run_finished"), "{body}");
    (first, body)
}

fn chat_body(i: usize) -> Value {
    json!({"id": format!("chat-{i}"), "trigger": "submit-message", "messages": [
        {"id": format!("u-{i}"), "role": "user", "parts": [{"type": "text", "text": format!("hello {i}")}]}
    ]})
}

/// The CPU time process `pid` has used, user and system.
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis((ticks(11) + ticks(12)) * 1000 / hz)
}

/// One chat over a kept-alive connection, written and read as bytes (the load generator's own
/// cost stays small, so the figure is the server's): returns when the first event came.
async fn chat_over(
    stream: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
    host: &str,
    path: &str,
    i: usize,
) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = chat_body(i).to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let t0 = Instant::now();
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the chat is sent");
    buf.clear();
    let mut first = None;
    // A streamed answer is chunked; its last chunk is empty.
    while !(buf.ends_with(b"\r\n0\r\n\r\n") && buf.windows(6).any(|w| w == b"[DONE]")) {
        let n = stream.read_buf(buf).await.expect("the answer reads");
        assert!(
            n > 0,
            "the server closed the connection: {}",
            String::from_utf8_lossy(buf)
        );
        if first.is_none() && buf.windows(5).any(|w| w == b"data:") {
            first = Some(t0.elapsed());
        }
    }
    assert!(
        buf.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(buf)
    );
    let said = format!("hello {i}");
    assert!(
        buf.windows(said.len()).any(|w| w == said.as_bytes()),
        "{}",
        String::from_utf8_lossy(buf)
    );
    first.unwrap_or_else(|| t0.elapsed())
}

/// Posts `n` chats to the UI message stream endpoint `path` of the server `pid` serves on
/// `port`, over `concurrency` kept-alive connections, and reads each answer to its end; with
/// the server's CPU time per chat.
async fn ui_load(port: u16, path: &str, pid: u32, n: usize, concurrency: usize) -> Value {
    let cpu0 = process_cpu(pid);
    let t0 = Instant::now();
    let host = format!("127.0.0.1:{port}");
    let per_connection = n.div_ceil(concurrency);
    let connections = (0..concurrency).map(|c| {
        let (host, path) = (host.clone(), path.to_owned());
        async move {
            let mut stream = tokio::net::TcpStream::connect(&host)
                .await
                .expect("a connection");
            stream.set_nodelay(true).expect("nodelay");
            let mut buf = Vec::with_capacity(4096);
            let mut latencies = Vec::new();
            for k in 0..per_connection {
                let i = c * per_connection + k;
                if i < n {
                    latencies.push(chat_over(&mut stream, &mut buf, &host, &path, i).await);
                }
            }
            latencies
        }
    });
    let mut latencies: Vec<Duration> = futures::future::join_all(connections)
        .await
        .into_iter()
        .flatten()
        .collect();
    let wall = t0.elapsed();
    latencies.sort();
    let mut report = summary(n, wall, &latencies);
    report["server_cpu_ms_per_request"] =
        json!((process_cpu(pid) - cpu0).as_secs_f64() * 1e3 / n as f64);
    report
}

/// W7. `runs` sizes the load (default 2,000 requests); `clients` the fan-out (default 1,000).
pub(crate) async fn run(runs: usize, clients: usize, peer: Option<std::path::PathBuf>) -> Value {
    let exe = std::env::current_exe().expect("this binary");
    let mut command = Command::new(exe);
    command.args(["--workload", "w7", "--serve-http"]);
    let server = Served::start(command);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .build()
        .expect("an HTTP client");
    let concurrency = 64;

    // Runs started per second: the request returns once the run is under way.
    let (wall, latencies) = load(runs, concurrency, |i| {
        let (client, url) = (client.clone(), server.url("/v1/runs"));
        async move {
            let t0 = Instant::now();
            let r = client
                .post(&url)
                .json(&json!({"agent": "echo", "input": format!("n{i}")}))
                .send()
                .await
                .expect("sent");
            assert_eq!(r.status(), 202);
            t0.elapsed()
        }
    })
    .await;
    let starts = summary(runs, wall, &latencies);

    // From the request to the run's first event on its stream.
    let n = runs / 4;
    let (wall, latencies) = load(n, 16, |i| {
        let (client, base) = (client.clone(), server.url(""));
        async move {
            let t0 = Instant::now();
            let (first, _) = run_and_follow(&client, &base, &format!("f{i}"), t0).await;
            first
        }
    })
    .await;
    let first_event = summary(n, wall, &latencies);

    // One run, many clients following it.
    let rss_before = server.rss_kib();
    let events_url = server.url(&start_run(&client, &server.url(""), "ticker", "go").await);
    let t0 = Instant::now();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(rss_before));
    let watch = {
        let (peak, pid) = (peak.clone(), server.child.id().to_string());
        tokio::spawn(async move {
            loop {
                let rss = crate::measure::process_status_kib(&pid, "VmRSS:");
                peak.fetch_max(rss, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let followers = futures::future::join_all((0..clients).map(|_| {
        let (client, url) = (client.clone(), events_url.clone());
        async move {
            let r = client.get(&url).send().await.expect("a stream");
            let (_, body) = read_stream(r, Instant::now()).await;
            body.matches("event: ").count()
        }
    }))
    .await;
    watch.abort();
    let fanout_wall = t0.elapsed();
    let counts: std::collections::BTreeSet<usize> = followers.iter().copied().collect();
    assert_eq!(
        counts.len(),
        1,
        "every client got the same events: {counts:?}"
    );
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let fanout = json!({
        "clients": clients,
        "events_each": followers[0],
        "wall_s": fanout_wall.as_secs_f64(),
        "server_rss_before_kib": rss_before,
        "server_rss_peak_kib": peak,
        "kib_per_stream": peak.saturating_sub(rss_before) as f64 / clients as f64,
    });

    // Many runs at once, each followed by its client to the end.
    let n = clients;
    let (wall, latencies) = load(n, n, |i| {
        let (client, base) = (client.clone(), server.url(""));
        async move {
            let t0 = Instant::now();
            run_and_follow(&client, &base, &format!("c{i}"), t0).await;
            t0.elapsed()
        }
    })
    .await;
    let concurrent = summary(n, wall, &latencies);

    // The AI SDK UI message stream door, checkpointed to SQLite and to the in-memory store (the
    // peer keeps nothing), and the peer on the same load.
    let ui = ui_load(
        server.port,
        "/v1/ui/echo",
        server.child.id(),
        runs,
        concurrency,
    )
    .await;
    drop(server);
    let mut command = Command::new(std::env::current_exe().expect("this binary"));
    command.args(["--workload", "w7", "--serve-http", "--memory-store"]);
    let in_memory = Served::start(command);
    let ui_memory = ui_load(
        in_memory.port,
        "/v1/ui/echo",
        in_memory.child.id(),
        runs,
        concurrency,
    )
    .await;
    drop(in_memory);
    let mut report = json!({
        "framework": "agentry",
        "workload": "w7",
        "store": "sqlite",
        "starts": starts,
        "first_event": first_event,
        "fanout": fanout,
        "concurrent_runs": concurrent,
        "ui_stream": ui,
        "ui_stream_memory_store": ui_memory,
    });
    if let Some(ai) = peer {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peer/ai_sdk_server.mjs");
        let mut command = Command::new("node");
        command.arg(script).env("AGENTRY_AI_SDK", ai);
        let node = Served::start(command);
        let peer = ui_load(node.port, "/", node.child.id(), runs, concurrency).await;
        // Ours over the peer's: throughput, and its p99 and CPU per request over ours.
        let ratio = |ours: &Value, key: &str, peer_over_ours: bool| {
            let (a, b) = (
                ours[key].as_f64().unwrap_or(0.0),
                peer[key].as_f64().unwrap_or(0.0),
            );
            json!(if peer_over_ours { b / a } else { a / b })
        };
        for (suffix, ours) in [("", &ui), ("_memory_store", &ui_memory)] {
            report[format!("throughput_ratio{suffix}")] = ratio(ours, "per_s", false);
            report[format!("p99_ratio{suffix}")] = ratio(ours, "p99_ms", true);
            report[format!("cpu_ratio{suffix}")] = ratio(ours, "server_cpu_ms_per_request", true);
        }
        report["peer"] = json!({"framework": "ai-sdk 7 (node, streamText + toUIMessageStreamResponse, mock model)", "ui_stream": peer});
    }
    report
}
