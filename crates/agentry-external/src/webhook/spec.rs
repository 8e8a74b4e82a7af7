//! What a webhook handler posts to: its URL, headers, signing secret, time limit, retries and
//! whether its failure fails the event.

use crate::claude::EventName;
use crate::command::decides;
use crate::error::SettingsError;
use crate::handler::{as_seconds, seconds};
use agentry_core::env_template::{self, Syntax};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most retries a webhook may ask for.
pub const MAX_RETRIES: u32 = 10;

/// One webhook handler, as Claude Code's settings declare an HTTP hook
/// (`{"type": "http", "url": ..., "headers": {...}, "allowedEnvVars": [...], "timeout": N}`),
/// with agentry's additions: `"secret"` (a Standard Webhooks signing secret, named by an
/// environment variable), `"retries"` and `"failClosed"`.
///
/// Each event the handler matches is POSTed to `url` as the same JSON a command gets on stdin
/// (`Content-Type: application/json`); the response body is read as a command's stdout. Header
/// values and the secret stay templates here (`"Bearer ${HOOK_TOKEN}"`, `"${HOOK_SECRET}"`):
/// they are resolved from the environment for each delivery and never stored, logged or shown
/// (`Debug` and [`HandlerSpec::to_value`](crate::HandlerSpec::to_value) show the templates).
///
/// ```
/// use agentry_external::WebhookSpec;
/// use std::time::Duration;
/// let spec = WebhookSpec::new("https://hooks.example.com/agentry")
///     .header("Authorization", "Bearer ${HOOK_TOKEN}")
///     .allow_env_var("HOOK_TOKEN")
///     .secret("${HOOK_SECRET}")
///     .with_timeout(Duration::from_secs(5));
/// assert_eq!(spec.timeout(), Some(Duration::from_secs(5)));
/// assert!(format!("{spec:?}").contains("Bearer ${HOOK_TOKEN}"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WebhookSpec {
    /// Where events are POSTed (`http` or `https`).
    pub url: String,
    /// Headers sent with each delivery. `$NAME` and `${NAME}` in a value are replaced with the
    /// environment variable when `NAME` is listed in [`allowed_env_vars`](Self::allowed_env_vars)
    /// (a listed variable that is not set fails the delivery), and with nothing otherwise, as in
    /// Claude Code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The environment variables header values may use.
    #[serde(
        default,
        rename = "allowedEnvVars",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub allowed_env_vars: Vec<String>,
    /// The longest one delivery may take, in milliseconds (settings give seconds in `timeout`);
    /// `None` for the event's default.
    #[serde(
        default,
        rename = "timeout",
        deserialize_with = "seconds",
        serialize_with = "as_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_ms: Option<u64>,
    /// The signing secret, as a reference to the environment variable that holds it
    /// (`"${HOOK_SECRET}"`); the variable holds a Standard Webhooks secret (`whsec_` and base64).
    /// With a secret, each delivery carries `webhook-id`, `webhook-timestamp` and
    /// `webhook-signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// How many times a failed delivery is tried again (at most [`MAX_RETRIES`]), with growing
    /// waits between tries. Only on events that decide nothing (PostCompact, SessionEnd,
    /// Notification, observe-only agentry events): a deciding event is never delivered twice.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// A failed delivery fails the event (and the run), instead of being reported as HookFailed
    /// and passed over.
    #[serde(
        default,
        rename = "failClosed",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub fail_closed: bool,
    /// Spinner text in Claude Code; kept, unused.
    #[serde(
        default,
        rename = "statusMessage",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl WebhookSpec {
    /// A webhook posting to `url`, unsigned, with no headers of its own.
    pub fn new(url: impl Into<String>) -> Self {
        WebhookSpec {
            url: url.into(),
            headers: BTreeMap::new(),
            allowed_env_vars: Vec::new(),
            timeout_ms: None,
            secret: None,
            retries: 0,
            fail_closed: false,
            status_message: None,
        }
    }

    /// Adds a header; `value` may refer to variables listed with
    /// [`allow_env_var`](Self::allow_env_var) (`"Bearer ${HOOK_TOKEN}"`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Lets header values use the environment variable `name`.
    pub fn allow_env_var(mut self, name: impl Into<String>) -> Self {
        self.allowed_env_vars.push(name.into());
        self
    }

    /// Signs deliveries with the secret in the environment variable `template` refers to
    /// (`"${HOOK_SECRET}"`).
    pub fn secret(mut self, template: impl Into<String>) -> Self {
        self.secret = Some(template.into());
        self
    }

    /// The longest one delivery may take.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(timeout.as_millis().max(1) as u64);
        self
    }

    /// Tries a failed delivery again up to `retries` times, on events that decide nothing.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// A failed delivery fails the event.
    pub fn fail_closed(mut self) -> Self {
        self.fail_closed = true;
        self
    }

    /// The time limit of one delivery, if the spec sets one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// How errors and events name this webhook: its URL (a password in it shown as `***`).
    pub fn display(&self) -> String {
        match reqwest::Url::parse(&self.url) {
            Ok(mut url) if url.password().is_some() => {
                let _ = url.set_password(Some("***"));
                url.to_string()
            }
            _ => self.url.clone(),
        }
    }

    /// Whether the spec can be used: a field name and what is wrong with it.
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        match reqwest::Url::parse(&self.url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            Ok(url) => {
                return Err((
                    "url",
                    format!("must be an http or https URL, not {}:", url.scheme()),
                ));
            }
            Err(e) => return Err(("url", format!("is not a URL ({e})"))),
        }
        if let Some(secret) = &self.secret
            && env_template::references(secret, Syntax::SHELL).is_empty()
        {
            return Err((
                "secret",
                "must name the environment variable that holds it (\"${HOOK_SECRET}\"), not hold the secret itself".into(),
            ));
        }
        if self.retries > MAX_RETRIES {
            return Err(("retries", format!("is at most {MAX_RETRIES}")));
        }
        for name in self.headers.keys() {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(("headers", format!("`{name}` is not a valid header name")));
            }
        }
        Ok(())
    }

    /// What is legal but probably not meant, on `event`.
    pub(crate) fn warnings(&self, event: EventName) -> Vec<String> {
        let mut out = Vec::new();
        if self.retries > 0 && decides(event) {
            out.push(format!(
                "retries: {event} can decide, and a deciding event is never delivered twice; ignored"
            ));
        }
        for (name, value) in &self.headers {
            for var in env_template::references(value, Syntax::SHELL) {
                if !self.allowed_env_vars.iter().any(|a| a == var) {
                    out.push(format!(
                        "headers.{name}: uses ${var}, which allowedEnvVars does not list; it is sent empty, as in Claude Code"
                    ));
                }
            }
        }
        out
    }

    /// Reads an `http` handler of a settings file at `at`, for `event`.
    pub(crate) fn from_settings(
        handler: &Value,
        at: &str,
        event: EventName,
        warnings: &mut Vec<String>,
    ) -> Result<WebhookSpec, SettingsError> {
        let spec: WebhookSpec = serde_json::from_value(handler.clone())
            .map_err(|e| SettingsError::new(at, e.to_string()))?;
        spec.check()
            .map_err(|(field, message)| SettingsError::new(format!("{at}.{field}"), message))?;
        warnings.extend(
            spec.warnings(event)
                .into_iter()
                .map(|w| format!("{at}.{w}")),
        );
        Ok(spec)
    }

    /// The longest all tries of one delivery may take, with `timeout` for each.
    pub(crate) fn worst_case(&self, timeout: Duration) -> Duration {
        let tries = self.retries.min(MAX_RETRIES);
        let waits: Duration = (0..tries).map(super::deliver::longest_backoff).sum();
        timeout * (tries + 1) + waits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::HandlerSpec;
    use serde_json::json;

    #[test]
    fn reads_claude_code_fields_and_agentrys_additions() {
        let mut warnings = Vec::new();
        let spec = WebhookSpec::from_settings(
            &json!({
                "type": "http", "url": "https://h.example/x", "timeout": 2,
                "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "$TEAM"},
                "allowedEnvVars": ["TOKEN"], "secret": "${SECRET}", "retries": 3,
                "failClosed": true, "once": true
            }),
            "hooks.Notification[0].hooks[0]",
            EventName::Notification,
            &mut warnings,
        )
        .unwrap();
        assert_eq!(spec.timeout(), Some(Duration::from_secs(2)));
        assert_eq!((spec.retries, spec.fail_closed), (3, true));
        assert_eq!(
            warnings,
            [
                "hooks.Notification[0].hooks[0].headers.X-Team: uses $TEAM, which allowedEnvVars does not list; it is sent empty, as in Claude Code"
            ]
        );
        let mut value = HandlerSpec::Http(spec.clone()).to_value();
        assert_eq!(value["type"], "http");
        assert_eq!(value["secret"], "${SECRET}");
        value.as_object_mut().unwrap().remove("type");
        assert_eq!(serde_json::from_value::<WebhookSpec>(value).unwrap(), spec);
    }

    #[test]
    fn errors_and_warnings_say_where() {
        let read = |v: Value, event| {
            let mut warnings = Vec::new();
            WebhookSpec::from_settings(&v, "h", event, &mut warnings).map(|_| warnings)
        };
        let e = read(json!({"type": "http"}), EventName::Stop).unwrap_err();
        assert!(e.to_string().contains("url"), "{e}");
        let e = read(json!({"url": "ftp://x"}), EventName::Stop).unwrap_err();
        assert_eq!(e.at(), "h.url");
        let e = read(
            json!({"url": "http://x", "secret": "whsec_c2VjcmV0"}),
            EventName::Stop,
        )
        .unwrap_err();
        assert_eq!(e.at(), "h.secret");
        assert!(!e.to_string().contains("c2VjcmV0"), "{e}");
        let e = read(json!({"url": "http://x", "retries": 99}), EventName::Stop).unwrap_err();
        assert_eq!(e.at(), "h.retries");
        let w = read(
            json!({"url": "http://x", "retries": 2}),
            EventName::PreToolUse,
        )
        .unwrap();
        assert!(
            w[0].starts_with("h.retries: PreToolUse can decide"),
            "{w:?}"
        );
    }

    #[test]
    fn display_hides_a_password_in_the_url() {
        let spec = WebhookSpec::new("https://user:pw@h.example/x");
        assert_eq!(spec.display(), "https://user:***@h.example/x");
    }

    #[test]
    fn worst_case_counts_every_try() {
        let spec = WebhookSpec::new("http://x").retries(2);
        let one = Duration::from_secs(1);
        assert!(spec.worst_case(one) >= Duration::from_secs(3));
        assert_eq!(WebhookSpec::new("http://x").worst_case(one), one);
    }
}
