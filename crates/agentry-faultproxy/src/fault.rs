//! What the proxy does to one connection (or one request): the faults.

use std::fmt;
use std::time::Duration;

/// What the proxy does to a connection, or, with a plan scoped to requests
/// ([`Plan::on_requests_containing`](crate::Plan::on_requests_containing)), to the matching
/// request and its answer.
///
/// Three groups:
///
/// - **Answered in place of the upstream**: [`Status`](Fault::Status), [`Stall`](Fault::Stall),
///   [`Garbage`](Fault::Garbage) and [`Reset`](Fault::Reset) read one HTTP/1.1 request (its head
///   and its body, by `Content-Length` or chunked) and never pass it on.
/// - **Applied to the upstream's answer**: [`SlowFirstByte`](Fault::SlowFirstByte),
///   [`CutAfter`](Fault::CutAfter), [`StallAfter`](Fault::StallAfter) and
///   [`ResetAfter`](Fault::ResetAfter) forward the request and act on the bytes that come back;
///   a marker that never comes back means the answer passes whole and nothing is injected.
/// - [`Pass`](Fault::Pass): the bytes go through untouched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward both ways, untouched.
    Pass,
    /// Answer the request with this HTTP status and a small JSON error body in the shape OpenAI
    /// and Anthropic use (`{"error": {"message", "type", "code"}}`), with `Connection: close`,
    /// then close the connection. With `retry_after`, the answer carries `Retry-After` (whole
    /// seconds, rounded up) and `retry-after-ms` (exact).
    Status {
        /// The HTTP status code, e.g. 429 or 500.
        code: u16,
        /// The wait the answer asks the client for, if any.
        retry_after: Option<Duration>,
    },
    /// Forward the request, and hold the first byte of the upstream's answer for this long.
    SlowFirstByte(Duration),
    /// Forward the answer up to and including the first occurrence of these bytes, then close
    /// the connection (a clean FIN): e.g. a server-sent event stream cut in the middle of a
    /// tool call's arguments.
    CutAfter(Vec<u8>),
    /// Read the request and never answer; the socket stays open until the client closes it.
    Stall,
    /// Forward the answer up to and including the first occurrence of these bytes, then send
    /// nothing more, keeping the socket open until the client closes it.
    StallAfter(Vec<u8>),
    /// Answer the request with this many bytes of junk that is not HTTP, then close.
    Garbage(usize),
    /// Read the request, then reset the connection (an RST: `SO_LINGER` zero, then close).
    Reset,
    /// Forward the answer up to and including the first occurrence of these bytes, then reset
    /// the connection.
    ResetAfter(Vec<u8>),
}

impl Fault {
    /// An HTTP error status without `Retry-After`.
    pub fn status(code: u16) -> Fault {
        Fault::Status {
            code,
            retry_after: None,
        }
    }

    /// A 429 asking the client to wait `retry_after`.
    pub fn rate_limited(retry_after: Duration) -> Fault {
        Fault::Status {
            code: 429,
            retry_after: Some(retry_after),
        }
    }

    /// [`Fault::CutAfter`] of `marker`.
    pub fn cut_after(marker: impl AsRef<[u8]>) -> Fault {
        Fault::CutAfter(marker.as_ref().to_vec())
    }

    /// [`Fault::StallAfter`] of `marker`.
    pub fn stall_after(marker: impl AsRef<[u8]>) -> Fault {
        Fault::StallAfter(marker.as_ref().to_vec())
    }

    /// [`Fault::ResetAfter`] of `marker`.
    pub fn reset_after(marker: impl AsRef<[u8]>) -> Fault {
        Fault::ResetAfter(marker.as_ref().to_vec())
    }

    /// True for [`Fault::Pass`].
    pub fn is_pass(&self) -> bool {
        matches!(self, Fault::Pass)
    }

    /// True for the faults that read a request and answer it (or not) in place of the
    /// upstream, which is then never contacted for it.
    pub fn answers_in_place(&self) -> bool {
        matches!(
            self,
            Fault::Status { .. } | Fault::Stall | Fault::Garbage(_) | Fault::Reset
        )
    }

    /// The fault's name, as its spec begins: `pass`, `status`, `slow`, `cut-after`, `stall`,
    /// `stall-after`, `garbage`, `reset`, `reset-after`.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Pass => "pass",
            Fault::Status { .. } => "status",
            Fault::SlowFirstByte(_) => "slow",
            Fault::CutAfter(_) => "cut-after",
            Fault::Stall => "stall",
            Fault::StallAfter(_) => "stall-after",
            Fault::Garbage(_) => "garbage",
            Fault::Reset => "reset",
            Fault::ResetAfter(_) => "reset-after",
        }
    }
}

/// The fault's spec, as [`str::parse`] reads it (markers shown as UTF-8, lossily).
impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            Fault::Pass | Fault::Stall | Fault::Reset => f.write_str(name),
            Fault::Status { code, retry_after } => {
                write!(f, "{name}:{code}")?;
                match retry_after {
                    Some(wait) => write!(f, ":{}ms", wait.as_millis()),
                    None => Ok(()),
                }
            }
            Fault::SlowFirstByte(wait) => write!(f, "{name}:{}ms", wait.as_millis()),
            Fault::Garbage(n) => write!(f, "{name}:{n}"),
            Fault::CutAfter(marker) | Fault::StallAfter(marker) | Fault::ResetAfter(marker) => {
                write!(f, "{name}:{}", String::from_utf8_lossy(marker))
            }
        }
    }
}
