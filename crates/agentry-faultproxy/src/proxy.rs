//! The proxy: a listener in front of one upstream, a task per connection.

use crate::connection::serve;
use crate::stats::{Injected, Stats};
use crate::{Fault, Plan};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::{JoinHandle, JoinSet};

/// A TCP proxy in front of one upstream address that injects the faults of its [`Plan`].
///
/// It listens until dropped; dropping it closes the listener and every connection it holds
/// (stalled ones too).
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    stats: Arc<Stats>,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1` at a port the system picks, in front of `upstream`
    /// (resolved once, now), injecting the faults of `plan`. Must be called within a tokio
    /// runtime, which then runs the proxy.
    pub async fn start(upstream: impl ToSocketAddrs, plan: Plan) -> io::Result<FaultProxy> {
        FaultProxy::bind("127.0.0.1:0", upstream, plan).await
    }

    /// Starts a proxy listening on `listen` in front of `upstream`.
    pub async fn bind(
        listen: impl ToSocketAddrs,
        upstream: impl ToSocketAddrs,
        plan: Plan,
    ) -> io::Result<FaultProxy> {
        let upstream = tokio::net::lookup_host(upstream)
            .await?
            .next()
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the upstream address resolves to nothing",
                )
            })?;
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(Stats::default());
        let accept = tokio::spawn(accept_loop(listener, upstream, plan, stats.clone()));
        Ok(FaultProxy {
            addr,
            upstream,
            stats,
            accept,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://` and the address it listens on, to put in a client's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The upstream address it forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.stats.connections()
    }

    /// Requests that matched a plan scoped to requests so far.
    pub fn requests_matched(&self) -> usize {
        self.stats.matched()
    }

    /// Every fault injected so far, in the order they were. A fault counts when it acted: a
    /// marker that never came, or a connection closed before its request was whole, injects
    /// nothing.
    pub fn injected(&self) -> Vec<Injected> {
        self.stats.all_injected()
    }

    /// The faults injected so far, without where.
    pub fn faults(&self) -> Vec<Fault> {
        self.injected().into_iter().map(|i| i.fault).collect()
    }

    /// How many faults were injected so far.
    pub fn faults_injected(&self) -> usize {
        self.stats.all_injected().len()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // The accept task owns the connections' tasks: aborting it ends them all.
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, plan: Plan, stats: Arc<Stats>) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = listener.accept().await;
        while connections.try_join_next().is_some() {}
        let Ok((client, _)) = accepted else {
            // Out of descriptors, or a connection reset before it was accepted: go on.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let index = stats.next_connection();
        connections.spawn(serve(client, index, upstream, plan.clone(), stats.clone()));
    }
}
