//! What several targets share: a tokio runtime, a lock that runs them one at a time, and a local
//! HTTP server that answers every request with canned bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

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
pub(crate) struct CannedServer {
    addr: SocketAddr,
    answer: Arc<Mutex<Canned>>,
}

impl CannedServer {
    /// The server, started on first use.
    pub(crate) fn get() -> &'static CannedServer {
        static SERVER: OnceLock<CannedServer> = OnceLock::new();
        SERVER.get_or_init(|| {
            ignore_sigpipe();
            let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
            let addr = listener.local_addr().expect("the local address");
            let answer = Arc::new(Mutex::new(Canned {
                status: 500,
                content_type: "text/plain",
                pieces: Vec::new(),
            }));
            let shared = answer.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let answer = shared.clone();
                    std::thread::spawn(move || serve(stream, &answer));
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
fn serve(mut stream: TcpStream, answer: &Mutex<Canned>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if buffer.len() > 1 << 20 || !fill(&mut stream, &mut buffer) {
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
            if !fill(&mut stream, &mut buffer) {
                return;
            }
        }
        buffer.drain(..head_end + length);
        let canned = answer.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if respond(&mut stream, &canned).is_err() {
            return;
        }
    }
}

fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match stream.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn respond(stream: &mut TcpStream, canned: &Canned) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {} Canned\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\n\r\n",
        canned.status, canned.content_type
    )?;
    for piece in canned.pieces.iter().filter(|p| !p.is_empty()) {
        write!(stream, "{:x}\r\n", piece.len())?;
        stream.write_all(piece)?;
        stream.write_all(b"\r\n")?;
        stream.flush()?;
    }
    stream.write_all(b"0\r\n\r\n")?;
    stream.flush()
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
