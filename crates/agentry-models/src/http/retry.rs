//! How often and how patiently a request is retried.

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// Retries of rate-limited (429) and failed (408, 409, 5xx) requests, and of connections that
/// broke before the model produced anything.
///
/// Waits grow exponentially from `initial_backoff` up to `max_backoff`, with jitter (each wait is
/// drawn between half and all of its step), unless the provider says how long to wait
/// (`Retry-After` or `retry-after-ms`), which is honoured as given. A request is given up when
/// `max_retries` retries are spent or when the next wait would take the time spent waiting past
/// `max_wait`; the error then says how many attempts were made.
///
/// ```
/// use agentry_models::RetryPolicy;
/// use std::time::Duration;
/// let patient = RetryPolicy::default()
///     .max_retries(8)
///     .max_wait(Duration::from_secs(120));
/// assert_eq!(patient.max_retries, 8);
/// assert_eq!(RetryPolicy::none().max_retries, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 4).
    pub max_retries: u32,
    /// The first wait (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest computed wait (default 20 s); a `Retry-After` may ask for longer.
    pub max_backoff: Duration,
    /// The most time spent waiting between attempts of one request (default 60 s).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries: the first failure is returned.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Sets the number of retries after the first attempt.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the first wait.
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// Sets the longest computed wait.
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// Sets the budget of time spent waiting between attempts.
    pub fn max_wait(mut self, budget: Duration) -> Self {
        self.max_wait = budget;
        self
    }

    /// The wait before retry number `retry` (0 for the first retry), with jitter, when the
    /// provider did not say how long to wait.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let step = self
            .initial_backoff
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
            .min(self.max_backoff);
        let half = step / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// The retry bookkeeping of one request: how many attempts were made and how long was waited.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    retries: u32,
    waited: Duration,
}

impl Attempts {
    /// The wait before the next attempt, or `None` when the policy's retries or wait budget are
    /// spent.
    pub(crate) fn next_wait(
        &mut self,
        policy: &RetryPolicy,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        if self.retries >= policy.max_retries {
            return None;
        }
        let wait = retry_after.unwrap_or_else(|| policy.backoff(self.retries));
        if self.waited + wait > policy.max_wait {
            return None;
        }
        self.retries += 1;
        self.waited += wait;
        Some(wait)
    }

    /// Attempts made so far, the first one included.
    pub(crate) fn made(&self) -> u32 {
        self.retries + 1
    }

    /// Time spent waiting between attempts.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }
}

/// Whether a response with this status may succeed when sent again. The provider's own
/// `x-should-retry` header, when present, decides.
pub(crate) fn status_is_retryable(status: StatusCode, headers: &HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

/// How long the provider asked us to wait: `retry-after-ms`, or `Retry-After` in seconds or as
/// an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return finite_secs(ms / 1000.0);
    }
    let value = header_str(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return finite_secs(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

fn finite_secs(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let policy = RetryPolicy::default();
        for retry in 0..10 {
            let step = (policy.initial_backoff * 2u32.pow(retry)).min(policy.max_backoff);
            let wait = policy.backoff(retry);
            assert!(wait >= step / 2 && wait <= step, "retry {retry}: {wait:?}");
        }
        assert!(policy.backoff(60) <= policy.max_backoff);
    }

    #[test]
    fn attempts_stop_at_the_retry_count_and_the_wait_budget() {
        let policy = RetryPolicy::default().max_retries(2);
        let mut attempts = Attempts::default();
        assert!(attempts.next_wait(&policy, None).is_some());
        assert!(attempts.next_wait(&policy, None).is_some());
        assert_eq!(attempts.next_wait(&policy, None), None);
        assert_eq!(attempts.made(), 3);

        let policy = RetryPolicy::default().max_wait(Duration::from_secs(5));
        let mut attempts = Attempts::default();
        let asked = Some(Duration::from_secs(3));
        assert_eq!(attempts.next_wait(&policy, asked), asked);
        assert_eq!(attempts.next_wait(&policy, asked), None);
        assert_eq!(attempts.waited(), Duration::from_secs(3));
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let wait = retry_after(&headers(&[("retry-after", &later)])).unwrap();
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
    }

    #[test]
    fn retryable_statuses_follow_the_provider_header_first() {
        let none = HeaderMap::new();
        assert!(status_is_retryable(StatusCode::TOO_MANY_REQUESTS, &none));
        assert!(status_is_retryable(StatusCode::BAD_GATEWAY, &none));
        assert!(!status_is_retryable(StatusCode::BAD_REQUEST, &none));
        assert!(!status_is_retryable(StatusCode::UNAUTHORIZED, &none));
        let no = headers(&[("x-should-retry", "false")]);
        assert!(!status_is_retryable(StatusCode::SERVICE_UNAVAILABLE, &no));
        let yes = headers(&[("x-should-retry", "true")]);
        assert!(status_is_retryable(StatusCode::BAD_REQUEST, &yes));
    }
}
