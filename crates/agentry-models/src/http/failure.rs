//! Turning HTTP failures into [`ModelError`]s that say what happened and what to do.

use super::endpoint::Endpoint;
use super::retry::Attempts;
use agentry_core::{ModelError, ModelErrorKind};
use reqwest::StatusCode;

/// The error a provider put in a failed response's body, in the OpenAI shape
/// (`{"error": {"message", "type", "code"}}`) or the Anthropic one
/// (`{"type": "error", "error": {"type", "message"}}`).
#[derive(Debug, Default)]
pub(crate) struct ProviderMessage {
    pub(crate) message: String,
    pub(crate) kind: String,
    pub(crate) code: String,
}

impl ProviderMessage {
    /// Reads the body; a body that is not such JSON is kept as text (shortened).
    pub(crate) fn parse(body: &str) -> ProviderMessage {
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(json) => ProviderMessage::from_value(&json),
            Err(_) => ProviderMessage {
                message: shorten(body.trim()),
                ..ProviderMessage::default()
            },
        }
    }

    /// Reads an error object, bare or under `error`.
    pub(crate) fn from_value(json: &serde_json::Value) -> ProviderMessage {
        let error = json.get("error").unwrap_or(json);
        let field = |name: &str| match error.get(name) {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let message = match error {
            serde_json::Value::String(text) => text.clone(),
            _ => field("message"),
        };
        ProviderMessage {
            message: if message.is_empty() {
                shorten(&json.to_string())
            } else {
                message
            },
            kind: field("type"),
            code: field("code"),
        }
    }

    fn says_context_too_long(&self) -> bool {
        let text = format!("{} {} {}", self.code, self.kind, self.message).to_lowercase();
        [
            "context_length",
            "context length",
            "context window",
            "maximum context",
            "prompt is too long",
            "too many tokens",
            "input is too long",
            "exceeds the context",
        ]
        .iter()
        .any(|needle| text.contains(needle))
    }
}

fn shorten(text: &str) -> String {
    const LIMIT: usize = 300;
    match text.char_indices().nth(LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The error for a response with a failure status, after `attempts`.
pub(crate) fn status_error(
    endpoint: &Endpoint,
    status: StatusCode,
    body: &str,
    attempts: &Attempts,
) -> ModelError {
    let said = ProviderMessage::parse(&endpoint.scrub(body));
    let code = status.as_u16();
    let env = endpoint.env;
    let url = &endpoint.url;
    let (kind, advice) = match code {
        401 => (
            ModelErrorKind::Auth,
            format!(
                "the API key was rejected: check `{}` (or the key given to `.api_key`) and that it is a key for {url}",
                env.api_key
            ),
        ),
        403 => (
            ModelErrorKind::Auth,
            "the key may not use this model or endpoint: check the key's permissions, organisation and project".to_owned(),
        ),
        404 => (
            ModelErrorKind::InvalidRequest,
            format!(
                "the model or the endpoint does not exist: check the model name and the base URL (`{}`; now {url})",
                env.base_url
            ),
        ),
        429 => (
            ModelErrorKind::RateLimited,
            retry_advice("rate-limited", attempts),
        ),
        _ if said.says_context_too_long() => (
            ModelErrorKind::ContextTooLong,
            "the conversation is longer than the model's context window: shorten the input, lower `max_tokens`, or compact the history with a BeforeModel hook".to_owned(),
        ),
        408 => (ModelErrorKind::Timeout, retry_advice("timed out", attempts)),
        400..=499 => (
            ModelErrorKind::InvalidRequest,
            "the provider rejected the request: check the model parameters and tool schemas".to_owned(),
        ),
        _ => (
            ModelErrorKind::Server,
            retry_advice("failing", attempts),
        ),
    };
    let detail = if said.message.is_empty() {
        String::new()
    } else {
        format!(": {}", said.message)
    };
    ModelError::new(
        endpoint.name.clone(),
        kind,
        format!("HTTP {code}{detail}; {advice}"),
    )
}

fn retry_advice(what: &str, attempts: &Attempts) -> String {
    if attempts.made() > 1 {
        format!(
            "the provider was still {what} after {} attempts over {:.1} s: raise the retry policy's `max_retries` or `max_wait`, or lower concurrency",
            attempts.made(),
            attempts.waited().as_secs_f64()
        )
    } else {
        format!(
            "the provider is {what}; retries are off or the provider said not to retry (`RetryPolicy`)"
        )
    }
}

/// The error for a request that got no response (connection refused, timeout, TLS), after
/// `attempts`.
pub(crate) fn transport_error(
    endpoint: &Endpoint,
    error: &reqwest::Error,
    attempts: &Attempts,
) -> ModelError {
    let (kind, what) = if error.is_timeout() {
        (
            ModelErrorKind::Timeout,
            "timed out: raise the timeouts (`timeout`, `read_timeout`) or check the server's load",
        )
    } else if error.is_connect() {
        (
            ModelErrorKind::Server,
            "could not connect: check that the server runs and the base URL is right",
        )
    } else {
        (
            ModelErrorKind::Stream,
            "no response could be read: the connection broke, or what came back was not HTTP (the cause is at the end)",
        )
    };
    ModelError::new(
        endpoint.name.clone(),
        kind,
        format!(
            "{} ({what}; {} attempt(s), env `{}`): {}",
            endpoint.url,
            attempts.made(),
            endpoint.env.base_url,
            endpoint.scrub(&error_chain(error))
        ),
    )
}

/// An error and its causes, joined.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    agentry_core::error_with_causes(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_read_in_both_shapes() {
        let openai = ProviderMessage::parse(
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        );
        assert!(openai.message.starts_with("This model's maximum"));
        assert_eq!(openai.code, "context_length_exceeded");
        assert!(openai.says_context_too_long());

        let anthropic = ProviderMessage::parse(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!(anthropic.kind, "invalid_request_error");
        assert!(anthropic.says_context_too_long());

        let html = ProviderMessage::parse("<html>Bad Gateway</html>");
        assert_eq!(html.message, "<html>Bad Gateway</html>");
        assert!(!html.says_context_too_long());
    }
}
