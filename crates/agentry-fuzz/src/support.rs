//! What several targets share: a tokio runtime, a lock that runs them one at a time, and a local
//! HTTP server that answers every request with canned bytes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest a target waits for what it drives (a model turn, a run, a request).
pub(crate) const PATIENCE: Duration = Duration::from_secs(8);

/// A current-thread tokio runtime shared by the targets that need one.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        ignore_sigpipe();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Holds the targets that share the runtime and the server one at a time (tests run on several
/// threads; libFuzzer runs one input at a time anyway).
pub(crate) fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A write to a pipe or socket whose reader has gone is an error to handle, not a signal that
/// ends the process (libFuzzer's `main` does not ignore SIGPIPE as Rust's does).
fn ignore_sigpipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: ignoring a signal installs no handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
}

/// What the server answers: a status, a content type and a body sent in pieces (each one chunk
/// of a chunked response, flushed on its own).
#[derive(Clone, Debug)]
pub(crate) struct Canned {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) pieces: Vec<Vec<u8>>,
}

/// A local HTTP/1.1 server (keep-alive) that answers every request with the current [`Canned`]
/// answer.
///
/// It runs as tasks of the shared [`runtime`], so it serves while a target drives that runtime,
/// and what a connection holds between inputs stays reachable from the runtime (a thread per
/// connection left LeakSanitizer a buffer it could not account for).
pub(crate) struct CannedServer {
    addr: SocketAddr,
    answer: Arc<Mutex<Canned>>,
}

impl CannedServer {
    /// The server, started on first use.
    pub(crate) fn get() -> &'static CannedServer {
        static SERVER: OnceLock<CannedServer> = OnceLock::new();
        SERVER.get_or_init(|| {
            let runtime = runtime();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
            listener
                .set_nonblocking(true)
                .expect("a non-blocking listener");
            let addr = listener.local_addr().expect("the local address");
            let listener = {
                let _context = runtime.enter();
                TcpListener::from_std(listener).expect("a tokio listener")
            };
            let answer = Arc::new(Mutex::new(Canned {
                status: 500,
                content_type: "text/plain",
                pieces: Vec::new(),
            }));
            let shared = answer.clone();
            runtime.spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, shared.clone()));
                }
            });
            CannedServer { addr, answer }
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sets what every request gets from now on.
    pub(crate) fn answer(&self, canned: Canned) {
        *self.answer.lock().unwrap_or_else(|p| p.into_inner()) = canned;
    }
}

/// Answers the requests of one connection until the client closes it.
async fn serve(mut stream: TcpStream, answer: Arc<Mutex<Canned>>) {
    let _ = stream.set_nodelay(true);
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if buffer.len() > 1 << 20 || !fill(&mut stream, &mut buffer).await {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            if !fill(&mut stream, &mut buffer).await {
                return;
            }
        }
        buffer.drain(..head_end + length);
        let canned = answer.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if respond(&mut stream, &canned).await.is_err() {
            return;
        }
    }
}

/// Reads what the client sent next onto `buffer`; false once it has closed (or a minute passed).
async fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match tokio::time::timeout(Duration::from_secs(60), stream.read(&mut chunk)).await {
        Ok(Ok(0) | Err(_)) | Err(_) => false,
        Ok(Ok(n)) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

async fn respond(stream: &mut TcpStream, canned: &Canned) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} Canned\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\n\r\n",
        canned.status, canned.content_type
    );
    stream.write_all(head.as_bytes()).await?;
    for piece in canned.pieces.iter().filter(|p| !p.is_empty()) {
        let size = format!("{:x}\r\n", piece.len());
        stream.write_all(size.as_bytes()).await?;
        stream.write_all(piece).await?;
        stream.write_all(b"\r\n").await?;
        stream.flush().await?;
    }
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await
}

/// A reqwest client for the canned server: no proxy, short limits.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(PATIENCE)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .expect("a reqwest client")
}

/// Prints what a target saw when `AGENTRY_FUZZ_DEBUG` is set: for checking that a corpus file
/// reaches the part of the parser it was written for.
pub(crate) fn debug(target: &str, what: &dyn std::fmt::Debug) {
    static ON: OnceLock<bool> = OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("AGENTRY_FUZZ_DEBUG").is_some()) {
        eprintln!("[{target}] {what:?}");
    }
}
