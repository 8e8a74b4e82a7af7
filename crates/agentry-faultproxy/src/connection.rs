//! One accepted connection: its fault chosen, then applied while bytes go both ways.

use crate::http::{Framing, find, garbage, request_len, status_answer};
use crate::marker::MarkerSearch;
use crate::stats::Stats;
use crate::{Fault, Plan};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a connection the proxy closes itself may take to say it is done reading, so the
/// close is a FIN the client reads to the end, not a reset of what it had not read.
const LINGER: Duration = Duration::from_secs(5);

/// Serves one accepted connection, number `index`, per `plan`.
pub(crate) async fn serve(
    client: TcpStream,
    index: usize,
    upstream: SocketAddr,
    plan: Plan,
    stats: Arc<Stats>,
) {
    let _ = client.set_nodelay(true);
    let scope = match plan.request_marker() {
        Some(marker) => Scope::Requests {
            marker: marker.to_vec(),
            plan: plan.clone(),
        },
        None => Scope::Connection,
    };
    let armed = match &scope {
        Scope::Connection => {
            let fault = plan.fault_for(index);
            if fault.answers_in_place() {
                let mut buf = Vec::new();
                let mut client = client;
                if let Ok(Read::Request | Read::Unframed) =
                    next_request(&mut client, &mut buf).await
                {
                    stats.injected(index, index, &fault);
                    answer_in_place(client, &fault, index as u64).await;
                }
                return;
            }
            Armed::new(fault, index)
        }
        Scope::Requests { .. } => None,
    };
    let Ok(upstream) = TcpStream::connect(upstream).await else {
        // Nothing to forward to: the client sees its connection closed, as behind a gateway
        // whose upstream is down.
        close(client).await;
        return;
    };
    let _ = upstream.set_nodelay(true);
    let pipe = Pipe {
        connection: index,
        stats,
        scope,
        pending: Vec::new(),
        unframed: false,
        armed,
    };
    pipe.run(client, upstream).await;
}

/// What the plan's index counts.
enum Scope {
    /// Connections: the fault was chosen when the connection was accepted.
    Connection,
    /// Requests that contain `marker`.
    Requests { marker: Vec<u8>, plan: Plan },
}

/// A fault applied to the upstream's answer, waiting for its moment.
struct Armed {
    fault: Fault,
    index: usize,
    search: Option<MarkerSearch>,
}

impl Armed {
    /// Arms `fault` if it acts on the answer.
    fn new(fault: Fault, index: usize) -> Option<Armed> {
        let search = match &fault {
            Fault::Pass => return None,
            Fault::CutAfter(m) | Fault::StallAfter(m) | Fault::ResetAfter(m) => {
                Some(MarkerSearch::new(m))
            }
            _ => None,
        };
        Some(Armed {
            fault,
            index,
            search,
        })
    }
}

/// What a piece of traffic leads to.
enum Next {
    /// Keep going.
    Go,
    /// Close the client's connection cleanly (FIN), after it reads what it was sent.
    Close,
    /// Send the client nothing more and keep its connection open until it closes it.
    Stall,
    /// Reset the client's connection.
    Reset,
    /// Answer the client in place of the upstream with this fault, then end.
    Answer(Fault, u64),
}

/// The bytes of one connection in both directions, and the fault state between them.
struct Pipe {
    connection: usize,
    stats: Arc<Stats>,
    scope: Scope,
    /// Client bytes not yet forwarded: a request read in part (request scope only).
    pending: Vec<u8>,
    /// The client's bytes stopped being HTTP the proxy can frame: forwarded as they come.
    unframed: bool,
    armed: Option<Armed>,
}

impl Pipe {
    async fn run(mut self, mut client: TcpStream, mut upstream: TcpStream) {
        let mut from_client = vec![0u8; 16 * 1024];
        let mut from_upstream = vec![0u8; 16 * 1024];
        let (mut client_open, mut upstream_open) = (true, true);
        let next = loop {
            if !client_open && !upstream_open {
                return;
            }
            tokio::select! {
                read = client.read(&mut from_client), if client_open => match read {
                    Ok(0) | Err(_) => {
                        // The client is done sending: so is the upstream's client.
                        client_open = false;
                        let _ = upstream.shutdown().await;
                    }
                    Ok(n) => match self.client_bytes(&from_client[..n], &mut upstream).await {
                        Next::Go => {}
                        other => break other,
                    },
                },
                read = upstream.read(&mut from_upstream), if upstream_open => match read {
                    Ok(0) | Err(_) => {
                        upstream_open = false;
                        let _ = client.shutdown().await;
                        if !client_open {
                            return;
                        }
                    }
                    Ok(n) => match self.upstream_bytes(&from_upstream[..n], &mut client).await {
                        Next::Go => {}
                        other => break other,
                    },
                },
            }
        };
        drop(upstream);
        match next {
            Next::Go => {}
            Next::Close => close(client).await,
            Next::Stall => hold(client).await,
            Next::Reset => reset(client),
            Next::Answer(fault, seed) => answer_in_place(client, &fault, seed).await,
        }
    }

    /// Bytes from the client: forwarded, or, scoped to requests, read a request at a time and
    /// checked for the marker.
    async fn client_bytes(&mut self, bytes: &[u8], upstream: &mut TcpStream) -> Next {
        let Scope::Requests { marker, plan } = &self.scope else {
            return forward(upstream, bytes).await;
        };
        if self.unframed {
            return forward(upstream, bytes).await;
        }
        self.pending.extend_from_slice(bytes);
        loop {
            match request_len(&self.pending) {
                Framing::Partial => return Next::Go,
                Framing::Unframed => {
                    self.unframed = true;
                    let rest = std::mem::take(&mut self.pending);
                    return forward(upstream, &rest).await;
                }
                Framing::Complete(len) => {
                    let request: Vec<u8> = self.pending.drain(..len).collect();
                    if find(&request, marker).is_some() {
                        let index = self.stats.next_match();
                        let fault = plan.fault_for(index);
                        if fault.answers_in_place() {
                            self.stats.injected(self.connection, index, &fault);
                            return Next::Answer(fault, index as u64);
                        }
                        if let Some(armed) = Armed::new(fault, index) {
                            self.armed = Some(armed);
                        }
                    }
                    if let Next::Close = forward(upstream, &request).await {
                        return Next::Close;
                    }
                }
            }
        }
    }

    /// Bytes from the upstream: forwarded, with the armed fault applied.
    async fn upstream_bytes(&mut self, bytes: &[u8], client: &mut TcpStream) -> Next {
        let Some(armed) = &mut self.armed else {
            return forward(client, bytes).await;
        };
        let reached = match &mut armed.search {
            Some(search) => search.feed(bytes),
            None => {
                // A slow first byte: held, then the rest passes.
                if let Fault::SlowFirstByte(wait) = armed.fault {
                    self.stats
                        .injected(self.connection, armed.index, &armed.fault);
                    tokio::time::sleep(wait).await;
                }
                self.armed = None;
                return forward(client, bytes).await;
            }
        };
        let Some(end) = reached else {
            return forward(client, bytes).await;
        };
        if let Next::Close = forward(client, &bytes[..end]).await {
            return Next::Close;
        }
        self.stats
            .injected(self.connection, armed.index, &armed.fault);
        match armed.fault {
            Fault::StallAfter(_) => Next::Stall,
            Fault::ResetAfter(_) => Next::Reset,
            _ => Next::Close,
        }
    }
}

/// Writes `bytes` to `to`; a peer that is gone ends the connection.
async fn forward(to: &mut TcpStream, bytes: &[u8]) -> Next {
    match to.write_all(bytes).await {
        Ok(()) => Next::Go,
        Err(_) => Next::Close,
    }
}

/// What reading a request found.
enum Read {
    /// A whole request (its bytes are at the start of the buffer).
    Request,
    /// Bytes the proxy cannot frame as HTTP.
    Unframed,
    /// The client closed before a whole request arrived.
    Closed,
}

/// Reads until `buf` holds a whole request.
async fn next_request(
    stream: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<Read> {
    let mut piece = [0u8; 8192];
    loop {
        match request_len(buf) {
            Framing::Complete(_) => return Ok(Read::Request),
            Framing::Unframed => return Ok(Read::Unframed),
            Framing::Partial => {}
        }
        let n = stream.read(&mut piece).await?;
        if n == 0 {
            return Ok(Read::Closed);
        }
        buf.extend_from_slice(&piece[..n]);
    }
}

/// Answers in place of the upstream: an HTTP status, junk, silence or a reset.
async fn answer_in_place(mut client: TcpStream, fault: &Fault, seed: u64) {
    match fault {
        Fault::Status { code, retry_after } => {
            if client
                .write_all(&status_answer(*code, *retry_after))
                .await
                .is_ok()
            {
                close(client).await;
            }
        }
        Fault::Garbage(n) => {
            if client.write_all(&garbage(*n, seed)).await.is_ok() {
                close(client).await;
            }
        }
        Fault::Reset => reset(client),
        _ => hold(client).await,
    }
}

/// Closes cleanly: a FIN, then what the client still sends is read and dropped until it
/// closes too (or [`LINGER`] passes), so unread bytes never turn the close into a reset.
async fn close(mut client: TcpStream) {
    let _ = client.shutdown().await;
    let _ = tokio::time::timeout(LINGER, drain(&mut client)).await;
}

/// Sends nothing, and keeps the connection open until the client closes it.
async fn hold(mut client: TcpStream) {
    drain(&mut client).await;
}

/// Reads and drops until the client closes.
async fn drain(client: &mut TcpStream) {
    let mut sink = [0u8; 8192];
    while let Ok(n) = client.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

/// Closes with an RST: `SO_LINGER` zero, then close.
fn reset(client: TcpStream) {
    let _ = client.set_zero_linger();
    drop(client);
}
