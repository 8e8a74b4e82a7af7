//! What a provider may send in one response, bounded before it is held: a server-sent event
//! longer than the event limit, or a response longer than the response limit, ends the read with
//! an error that names the limit, instead of growing a buffer without end.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::fmt;

/// The most bytes one server-sent event may have, by default (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 << 20;
/// The most bytes one streamed response may have, by default (256 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 << 20;
/// The most bytes of an error response that are read (the rest is not needed to say what
/// went wrong).
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Why a bounded body stopped.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The connection failed.
    Transport(reqwest::Error),
    /// It passed a limit (the message names it).
    TooLarge(String),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Transport(e) => e.fmt(f),
            BodyError::TooLarge(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BodyError {}

/// The limits of one response.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    pub(crate) max_event_bytes: usize,
    pub(crate) max_response_bytes: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// Counts what a stream of server-sent events has sent: in all, and since the blank line that
/// ended the last event.
#[derive(Debug, Default)]
struct Meter {
    total: usize,
    in_event: usize,
    /// The last byte seen was a line feed (a second one ends the event; carriage returns are
    /// skipped, so CRLF streams count alike).
    after_newline: bool,
}

impl Meter {
    fn read(&mut self, chunk: &[u8], limits: BodyLimits) -> Result<(), String> {
        self.total += chunk.len();
        if self.total > limits.max_response_bytes {
            return Err(format!(
                "the response passed {} bytes, the limit on one response (`max_response_bytes` of the model client)",
                limits.max_response_bytes
            ));
        }
        for &byte in chunk {
            match byte {
                b'\n' if self.after_newline => self.in_event = 0,
                b'\n' => self.after_newline = true,
                b'\r' => {}
                _ => {
                    self.after_newline = false;
                    self.in_event += 1;
                }
            }
            if self.in_event > limits.max_event_bytes {
                return Err(format!(
                    "one server-sent event passed {} bytes, the limit on one event (`max_event_bytes` of the model client)",
                    limits.max_event_bytes
                ));
            }
        }
        Ok(())
    }
}

/// `body` as it arrives, ended by an error once it passes `limits`.
pub(crate) fn bounded(
    body: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    limits: BodyLimits,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + 'static {
    let mut meter = Meter::default();
    let mut over = false;
    body.map(move |chunk| {
        if over {
            return Err(BodyError::TooLarge(
                "the response was cut at its limit".into(),
            ));
        }
        let chunk = chunk.map_err(BodyError::Transport)?;
        meter.read(&chunk, limits).map_err(|why| {
            over = true;
            BodyError::TooLarge(why)
        })?;
        Ok(chunk)
    })
}

/// The start of an error response's body as text: at most [`MAX_ERROR_BODY_BYTES`] are read.
pub(crate) async fn error_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        let room = MAX_ERROR_BODY_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(event: usize, response: usize) -> BodyLimits {
        BodyLimits {
            max_event_bytes: event,
            max_response_bytes: response,
        }
    }

    #[test]
    fn events_are_counted_from_the_blank_line_that_ends_the_last_one() {
        let mut meter = Meter::default();
        let l = limits(12, 1000);
        // Each event is 11 bytes without its line ends; LF and CRLF alike.
        assert!(meter.read(b"data: 12345\n\ndata: 12345\r\n\r\n", l).is_ok());
        // Split across chunks, the blank line still ends an event.
        assert!(meter.read(b"data: 12345\n", l).is_ok());
        assert!(meter.read(b"\ndata: 1234", l).is_ok());
        let err = meter.read(b"56789", l).unwrap_err();
        assert!(
            err.contains("passed 12 bytes") && err.contains("max_event_bytes"),
            "{err}"
        );
    }

    #[test]
    fn a_line_feed_inside_an_event_does_not_end_it() {
        let mut meter = Meter::default();
        let err = meter
            .read(b"data: 1\ndata: 2\ndata: 3\n", limits(20, 1000))
            .unwrap_err();
        assert!(err.contains("max_event_bytes"), "{err}");
    }

    #[test]
    fn the_whole_response_is_bounded_too() {
        let mut meter = Meter::default();
        let l = limits(100, 30);
        assert!(meter.read(b"data: 1\n\ndata: 2\n\n", l).is_ok());
        let err = meter.read(b"data: 3\n\ndata: 4\n\n", l).unwrap_err();
        assert!(err.contains("max_response_bytes"), "{err}");
    }
}
