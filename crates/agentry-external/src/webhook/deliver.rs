//! Delivering one event to a webhook: a signed POST of the payload, the answer read as a
//! command's stdout, retried with growing waits only where the event decides nothing.
//!
//! As in Claude Code: a 2xx with an empty body is success without a decision; a 2xx with a JSON
//! object is that decision; any other status, a body that is not a JSON object, a connection
//! error or a timeout is a non-blocking error (an HTTP status never blocks).

use super::client::chain;
use super::prepare::{Prepared, prepare};
use super::spec::{MAX_RETRIES, WebhookSpec};
use crate::claude::EventName;
use crate::command::{Finished, decides};
use reqwest::header::HeaderValue;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The wait before the first retry; each later one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The longest wait before retry number `retry` (0 for the first).
pub(super) fn longest_backoff(retry: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1u32 << retry.min(16))
        .min(MAX_BACKOFF)
}

/// The wait before retry number `retry`: between half and all of the longest, at random, so
/// that many failed deliveries do not come back at once.
fn backoff(retry: u32) -> Duration {
    let longest = longest_backoff(retry);
    let half = longest / 2;
    half + half.mul_f64(fastrand::f64())
}

/// One failed attempt, and whether trying again could help.
struct Failed {
    message: String,
    retry: bool,
}

/// At most this much of a body is quoted in an error.
const QUOTE: usize = 120;

fn quote(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body.to_string(),
    }
}

/// One POST: its answer as a finished command, or why it failed.
async fn attempt(
    client: &reqwest::Client,
    spec: &WebhookSpec,
    prepared: &Prepared,
    id: &str,
    body: &[u8],
    limit: usize,
) -> Result<String, Failed> {
    let mut headers = prepared.headers.clone();
    if let Some(key) = &prepared.key {
        // A fresh timestamp each try, the same id: a receiver tells a retry from a replay.
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let signature = key.sign(id, timestamp, body);
        for (name, value) in [
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signature),
        ] {
            headers.insert(
                name,
                HeaderValue::from_str(&value).expect("ids, numbers and base64 are header values"),
            );
        }
    }
    let response = client
        .post(&spec.url)
        .headers(headers)
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| Failed {
            message: if e.is_connect() {
                format!("could not be reached: {}", chain(&e.without_url()))
            } else {
                format!("the request failed: {}", chain(&e.without_url()))
            },
            retry: true,
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(Failed {
            message: format!(
                "answered HTTP {status} (a failure of the webhook; a status never blocks a call)"
            ),
            retry: status.is_server_error()
                || status == reqwest::StatusCode::TOO_MANY_REQUESTS
                || status == reqwest::StatusCode::REQUEST_TIMEOUT,
        });
    }
    let mut response = response;
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > limit {
                    return Err(Failed {
                        message: format!(
                            "answered with more than {limit} bytes, the limit on a hook's output (`CommandHooks::output_limits`)"
                        ),
                        retry: false,
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(Failed {
                    message: format!("its answer broke off: {}", chain(&e.without_url())),
                    retry: true,
                });
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let trimmed = text.trim();
    if trimmed.is_empty()
        || (trimmed.starts_with('{')
            && matches!(
                serde_json::from_str::<serde_json::Value>(trimmed),
                Ok(serde_json::Value::Object(_))
            ))
    {
        return Ok(text);
    }
    Err(Failed {
        message: format!(
            "answered {status} with a body that is not a JSON object (`{}`); a webhook answers with the protocol's JSON or nothing",
            quote(trimmed)
        ),
        retry: false,
    })
}

/// Delivers `payload` (the event's JSON) to the webhook on `event`: tried once, or on an event
/// that decides nothing up to `1 + retries` times while the failure may pass (no answer, a
/// timeout, 5xx, 408, 429). Each try has `timeout`. The answer comes back as a command that
/// exited 0 with the body on stdout, for the protocol's reading.
pub(crate) async fn deliver(
    client: &reqwest::Client,
    spec: &WebhookSpec,
    event: EventName,
    payload: &[u8],
    timeout: Duration,
    limit: usize,
) -> Result<Finished, String> {
    let started = Instant::now();
    let prepared = prepare(spec)?;
    let body = payload.strip_suffix(b"\n").unwrap_or(payload);
    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let tries = if decides(event) {
        1
    } else {
        1 + spec.retries.min(MAX_RETRIES)
    };
    let mut last = String::new();
    for n in 0..tries {
        if n > 0 {
            tokio::time::sleep(backoff(n - 1)).await;
        }
        let once = attempt(client, spec, &prepared, &id, body, limit);
        let failed = match tokio::time::timeout(timeout, once).await {
            Ok(Ok(stdout)) => {
                return Ok(Finished {
                    code: Some(0),
                    signal: None,
                    stdout,
                    stderr: String::new(),
                    duration: started.elapsed(),
                });
            }
            Ok(Err(failed)) => failed,
            Err(_) => Failed {
                message: format!("timed out after {timeout:?} (the hook's timeout)"),
                retry: true,
            },
        };
        last = failed.message;
        if !failed.retry {
            return Err(if n == 0 {
                last
            } else {
                format!("{last} (try {} of {tries})", n + 1)
            });
        }
        if n + 1 < tries {
            tracing::debug!(hook = %spec.display(), %event, error = %last, "a webhook delivery failed; trying again");
        }
    }
    Err(if tries > 1 {
        format!("{last} (after {tries} tries)")
    } else {
        last
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(longest_backoff(0), Duration::from_millis(250));
        assert_eq!(longest_backoff(1), Duration::from_millis(500));
        assert_eq!(longest_backoff(9), MAX_BACKOFF);
        for retry in 0..5 {
            let wait = backoff(retry);
            assert!(wait >= longest_backoff(retry) / 2 && wait <= longest_backoff(retry));
        }
    }

    #[test]
    fn long_bodies_are_quoted_short() {
        let q = quote(&"x".repeat(500));
        assert_eq!(q.chars().count(), QUOTE + 1);
    }
}
