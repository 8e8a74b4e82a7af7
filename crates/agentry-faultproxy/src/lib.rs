//! # agentry-faultproxy
//!
//! A small TCP proxy that stands between a client and one upstream (a model provider, an MCP
//! server over Streamable HTTP, a webhook receiver) and injects faults: 429 storms with
//! `Retry-After`, 500s, a slow first byte, a stream cut in the middle of a tool call, a
//! server that stalls forever, garbage bytes, a reset connection. agentry's end-to-end fault
//! tests run full agent runs through it and check that each run ends as the fault table says.
//!
//! - [`FaultProxy::start`] listens on `127.0.0.1` at a free port in front of an upstream
//!   address; point the client's base URL at [`FaultProxy::url`].
//! - A [`Plan`] chooses each connection's [`Fault`] by the connection's index:
//!   [`Plan::first`] (these faults for the first connections, then pass), [`Plan::always`],
//!   [`Plan::seeded`] (random, reproducible by seed), [`Plan::from_fn`]. Scoped with
//!   [`Plan::on_requests_containing`], it counts the HTTP requests that contain a marker
//!   instead, to pick one call out of kept-alive connections.
//! - The proxy counts connections and records every fault it injected
//!   ([`FaultProxy::injected`]), so a test can check that its fault really happened.
//!
//! Faults that answer in place of the upstream read one HTTP/1.1 request first; the others
//! work on any TCP protocol in which the client speaks first or the upstream answers.
//!
//! ```
//! use agentry_faultproxy::{Fault, FaultProxy, Plan};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use tokio::net::{TcpListener, TcpStream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! // An upstream that answers every request with 200 and closes.
//! let upstream = TcpListener::bind("127.0.0.1:0").await?;
//! let upstream_addr = upstream.local_addr()?;
//! tokio::spawn(async move {
//!     while let Ok((mut conn, _)) = upstream.accept().await {
//!         let mut request = [0u8; 1024];
//!         let _ = conn.read(&mut request).await;
//!         let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
//!     }
//! });
//!
//! // The first connection gets a 503 from the proxy itself; the next ones pass.
//! let proxy = FaultProxy::start(upstream_addr, Plan::first([Fault::status(503)])).await?;
//! let get = |addr| async move {
//!     let mut conn = TcpStream::connect(addr).await?;
//!     conn.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await?;
//!     let mut answer = Vec::new();
//!     conn.read_to_end(&mut answer).await?;
//!     std::io::Result::Ok(String::from_utf8_lossy(&answer).into_owned())
//! };
//! assert!(get(proxy.addr()).await?.starts_with("HTTP/1.1 503 Service Unavailable"));
//! assert!(get(proxy.addr()).await?.starts_with("HTTP/1.1 200 OK"));
//! assert_eq!(proxy.connections(), 2);
//! assert_eq!(proxy.faults(), [Fault::status(503)]);
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs, unreachable_pub)]

mod connection;
mod fault;
mod http;
mod marker;
mod plan;
mod proxy;
mod spec;
mod stats;

pub use fault::Fault;
pub use plan::Plan;
pub use proxy::FaultProxy;
pub use spec::ParseFaultError;
pub use stats::Injected;
