//! Just enough HTTP/1.1: where one request ends, and the error answer the proxy writes itself.

use std::time::Duration;

/// The longest request head the proxy reads before it stops treating the bytes as HTTP.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// How much of `buf` the first request takes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A whole request: its head and body are the first this many bytes.
    Complete(usize),
    /// Not whole yet: read more.
    Partial,
    /// Not HTTP/1.1 the proxy can frame (no head within [`MAX_HEAD`], a bad length).
    Unframed,
}

/// Where the first request in `buf` ends: its head (up to the blank line), then a body of
/// `Content-Length` bytes, or chunks up to the last one and its trailers, or nothing.
pub(crate) fn request_len(buf: &[u8]) -> Framing {
    let Some(head_end) = find(buf, b"\r\n\r\n").map(|at| at + 4) else {
        return match buf.len() > MAX_HEAD {
            true => Framing::Unframed,
            false => Framing::Partial,
        };
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let mut length = None;
    let mut chunked = false;
    for line in head.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<usize>() {
                Ok(n) => length = Some(n),
                Err(_) => return Framing::Unframed,
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    if chunked {
        return match chunked_len(&buf[head_end..]) {
            Framing::Complete(n) => Framing::Complete(head_end + n),
            other => other,
        };
    }
    let total = head_end + length.unwrap_or(0);
    match buf.len() >= total {
        true => Framing::Complete(total),
        false => Framing::Partial,
    }
}

/// The length of a chunked body at the start of `body`, trailers included.
fn chunked_len(body: &[u8]) -> Framing {
    let mut at = 0;
    loop {
        let Some(line_end) = find(&body[at..], b"\r\n").map(|n| at + n) else {
            return Framing::Partial;
        };
        let line = String::from_utf8_lossy(&body[at..line_end]);
        let size = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return Framing::Unframed;
        };
        at = line_end + 2;
        if size == 0 {
            // Trailers, each a line, then a blank line.
            return match body.get(at..at + 2) {
                Some(b"\r\n") => Framing::Complete(at + 2),
                Some(_) => match find(&body[at..], b"\r\n\r\n") {
                    Some(n) => Framing::Complete(at + n + 4),
                    None => Framing::Partial,
                },
                None => Framing::Partial,
            };
        }
        at += size + 2;
        if at > body.len() {
            return Framing::Partial;
        }
    }
}

/// The first position of `needle` in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The whole answer for [`Fault::Status`](crate::Fault::Status): status line, headers, and a
/// JSON error body in the OpenAI and Anthropic shape, closing the connection.
pub(crate) fn status_answer(code: u16, retry_after: Option<Duration>) -> Vec<u8> {
    let reason = reason(code);
    let kind = match code {
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    };
    let body = format!(
        r#"{{"type":"error","error":{{"message":"a fault injected by agentry-faultproxy","type":"{kind}","code":"fault_injected"}}}}"#
    );
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(wait) = retry_after {
        let secs = wait.as_millis().div_ceil(1000);
        head.push_str(&format!(
            "retry-after: {secs}\r\nretry-after-ms: {}\r\n",
            wait.as_millis()
        ));
    }
    head.push_str("\r\n");
    let mut answer = head.into_bytes();
    answer.extend_from_slice(body.as_bytes());
    answer
}

fn reason(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Injected Fault",
    }
}

/// `n` bytes that are not HTTP (not starting with `H`, so never `HTTP/`), the same for the
/// same `seed`.
pub(crate) fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut junk: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
    if let Some(first) = junk.first_mut()
        && *first == b'H'
    {
        *first = 0;
    }
    junk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_framed_by_length_by_chunks_or_as_head_only() {
        let get = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST";
        assert_eq!(request_len(get), Framing::Complete(get.len() - 4));
        let post = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(request_len(post), Framing::Complete(post.len()));
        assert_eq!(request_len(&post[..post.len() - 1]), Framing::Partial);
        assert_eq!(request_len(b"POST / HTTP/1.1\r\nContent"), Framing::Partial);
        let chunked =
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(request_len(chunked), Framing::Complete(chunked.len()));
        assert_eq!(request_len(&chunked[..chunked.len() - 2]), Framing::Partial);
        let trailers = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhi\r\n0\r\nT: 1\r\n\r\n";
        assert_eq!(request_len(trailers), Framing::Complete(trailers.len()));
        assert_eq!(
            request_len(b"POST / HTTP/1.1\r\nContent-Length: lots\r\n\r\n"),
            Framing::Unframed
        );
        assert_eq!(request_len(&vec![b'x'; MAX_HEAD + 1]), Framing::Unframed);
    }

    #[test]
    fn a_status_answer_is_whole_http_with_the_wait_asked_for() {
        let answer =
            String::from_utf8(status_answer(429, Some(Duration::from_millis(1500)))).unwrap();
        assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(answer.contains("retry-after: 2\r\nretry-after-ms: 1500\r\n"));
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(body.contains(r#""type":"rate_limit_error""#));
        assert!(garbage(64, 1).len() == 64 && garbage(64, 1) == garbage(64, 1));
    }
}
