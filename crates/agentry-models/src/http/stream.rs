//! One streamed model turn over HTTP: post, retry what may be retried, read server-sent events,
//! decode them into [`ModelEvent`]s, and say what had arrived when a stream breaks.

use super::bounded::{BodyError, bounded, error_body};
use super::endpoint::Endpoint;
use super::failure::ProviderMessage;
use super::failure::{error_chain, status_error, transport_error};
use super::retry::{Attempts, retry_after, status_is_retryable};
use agentry_core::{FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelStream, Usage};
use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::StreamExt;
use std::time::Duration;

/// Whether a decoder wants more events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    More,
    /// The turn is complete; stop reading.
    Done,
}

/// A failure found in the stream's content: an error event from the provider, or data that does
/// not make sense.
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub(crate) kind: ModelErrorKind,
    pub(crate) message: String,
}

impl DecodeError {
    /// A stream whose content could not be read.
    pub(crate) fn unreadable(message: impl Into<String>) -> Self {
        DecodeError {
            kind: ModelErrorKind::Stream,
            message: message.into(),
        }
    }

    /// An error the provider reported inside the stream (an OpenAI `error` object, a Responses
    /// `response.failed`, an Anthropic `error` event). Overload and server errors may pass when
    /// retried; rate limits too.
    pub(crate) fn reported(error: &serde_json::Value) -> Self {
        let said = ProviderMessage::from_value(error);
        let class = format!("{} {}", said.kind, said.code).to_lowercase();
        let kind = if class.contains("rate") {
            ModelErrorKind::RateLimited
        } else if ["server", "overloaded", "api_error"]
            .iter()
            .any(|k| class.contains(k))
        {
            ModelErrorKind::Server
        } else {
            ModelErrorKind::Stream
        };
        let named = if said.kind.is_empty() {
            "an error".to_owned()
        } else {
            format!("`{}`", said.kind)
        };
        DecodeError {
            kind,
            message: format!(
                "the provider reported {named} in the stream: {}",
                said.message
            ),
        }
    }

    /// Data that is not the JSON the provider documents.
    pub(crate) fn bad_json(event: &Event, error: &serde_json::Error) -> Self {
        let mut data = event.data.clone();
        if data.len() > 200 {
            let mut cut = 200;
            while !data.is_char_boundary(cut) {
                cut -= 1;
            }
            data.truncate(cut);
            data.push('…');
        }
        DecodeError::unreadable(format!(
            "an event the provider's protocol does not allow ({error}): {data}"
        ))
    }
}

/// How a complete turn closed.
#[derive(Debug, PartialEq)]
pub(crate) struct TurnEnd {
    /// The usage the provider reported, if it did.
    pub(crate) usage: Option<Usage>,
    /// Why the turn ended.
    pub(crate) finish: FinishReason,
}

impl TurnEnd {
    /// The closing events: the usage, if reported, then the finish.
    pub(crate) fn events(self) -> impl Iterator<Item = ModelEvent> {
        self.usage
            .map(ModelEvent::Usage)
            .into_iter()
            .chain([ModelEvent::Finish(self.finish)])
    }
}

/// Turns one provider's server-sent events into model events.
pub(crate) trait Decoder: Send {
    /// Reads one event, pushing what it completes onto `out`.
    fn event(&mut self, event: &Event, out: &mut Vec<ModelEvent>) -> Result<Flow, DecodeError>;

    /// The stream ended (the decoder said `Done`, or the server closed it): push what is still
    /// held and say how the turn closed (its usage, if reported, and why it finished), or fail
    /// if the turn is incomplete. The driver emits the usage and the finish last.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<TurnEnd, DecodeError>;

    /// What is half-received (an unfinished tool call), for the error when a stream breaks.
    fn partial(&self) -> Option<String>;
}

/// What a turn has streamed so far, for errors.
#[derive(Default)]
struct Progress {
    text_chars: usize,
    thinking_chars: usize,
    tool_calls: Vec<String>,
}

impl Progress {
    fn record(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::TextDelta(text) => self.text_chars += text.chars().count(),
            ModelEvent::ThinkingDelta(text) => self.thinking_chars += text.chars().count(),
            ModelEvent::ToolCall(call) => self.tool_calls.push(call.name.clone()),
            _ => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.text_chars == 0 && self.thinking_chars == 0 && self.tool_calls.is_empty()
    }

    fn describe(&self, partial: Option<String>) -> String {
        let mut parts = Vec::new();
        if self.thinking_chars > 0 {
            parts.push(format!("{} characters of reasoning", self.thinking_chars));
        }
        if self.text_chars > 0 {
            parts.push(format!("{} characters of text", self.text_chars));
        }
        if !self.tool_calls.is_empty() {
            parts.push(format!(
                "{} complete tool call(s) ({})",
                self.tool_calls.len(),
                self.tool_calls.join(", ")
            ));
        }
        parts.extend(partial);
        if parts.is_empty() {
            "nothing".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// Posts `body` to `endpoint` and streams the turn, decoded by a fresh `decoder()` per attempt.
///
/// Failure statuses that may succeed later (429, 408, 409, 5xx) and connections that fail or
/// break before anything was streamed are retried by the endpoint's policy. A stream that breaks
/// after output was streamed is not retried (hooks and callers have seen that output): it ends
/// with an error that says what had arrived.
pub(crate) fn turn_stream<'a, D, F>(
    endpoint: &'a Endpoint,
    body: Bytes,
    decoder: F,
) -> ModelStream<'a>
where
    D: Decoder + 'a,
    F: Fn() -> D + Send + 'a,
{
    Box::pin(async_stream::try_stream! {
        let mut attempts = Attempts::default();
        'attempt: loop {
            let response = open(endpoint, &body, &mut attempts).await?;
            let mut decoder = decoder();
            let mut progress = Progress::default();
            let mut out = Vec::new();
            let mut events = bounded(response.bytes_stream(), endpoint.limits).eventsource();
            // Read until the decoder has the whole turn, the server closes the stream, or the
            // connection breaks (`cut` then says how).
            let cut = loop {
                let event = match events.next().await {
                    None => break None,
                    Some(Err(error)) => {
                        let (kind, message) = stream_failure(endpoint, &error);
                        if !matches!(error, EventStreamError::Transport(BodyError::TooLarge(_))) {
                            break Some((kind, message));
                        }
                        // The same request would bring the same: not retried.
                        let error = DecodeError { kind, message };
                        Err::<Event, _>(broken(endpoint, error, &progress, decoder.partial()))?
                    }
                    Some(Ok(event)) => event,
                };
                let flow = match decoder.event(&event, &mut out) {
                    Ok(flow) => flow,
                    Err(error) => {
                        let retryable = matches!(
                            error.kind,
                            ModelErrorKind::Server | ModelErrorKind::RateLimited
                        );
                        if retryable && progress.is_empty() && out.is_empty()
                            && let Some(wait) = attempts.next_wait(&endpoint.retry, None) {
                                backoff(endpoint, "error event", &error.message, wait).await;
                                continue 'attempt;
                            }
                        Err::<Flow, _>(broken(endpoint, error, &progress, decoder.partial()))?
                    }
                };
                for event in out.drain(..) {
                    progress.record(&event);
                    yield event;
                }
                if flow == Flow::Done {
                    break None;
                }
            };
            // A turn the decoder holds whole is complete, even if the connection broke after
            // its end.
            let closing = match decoder.end(&mut out) {
                Ok(closing) => closing,
                Err(incomplete) => {
                let error = match cut {
                    Some((kind, message)) => DecodeError { kind, message },
                    None => incomplete,
                };
                // Nothing was streamed: the same request can be sent again.
                if progress.is_empty()
                    && let Some(wait) = attempts.next_wait(&endpoint.retry, None) {
                        backoff(endpoint, "stream ended early", &error.message, wait).await;
                        continue 'attempt;
                    }
                Err::<TurnEnd, _>(broken(endpoint, error, &progress, decoder.partial()))?
                }
            };
            out.extend(closing.events());
            for event in out.drain(..) {
                yield event;
            }
            break;
        }
    })
}

/// Posts until a success status arrives, retrying what the policy allows.
async fn open(
    endpoint: &Endpoint,
    body: &Bytes,
    attempts: &mut Attempts,
) -> Result<reqwest::Response, ModelError> {
    loop {
        let response = match endpoint.post(body.clone()).await {
            Ok(response) => response,
            Err(error) => match attempts.next_wait(&endpoint.retry, None) {
                Some(wait) => {
                    backoff(endpoint, "no response", &error_chain(&error), wait).await;
                    continue;
                }
                None => return Err(transport_error(endpoint, &error, attempts)),
            },
        };
        let status = response.status();
        if status.is_success() {
            return expect_event_stream(endpoint, response).await;
        }
        let retryable = status_is_retryable(status, response.headers());
        let asked = retry_after(response.headers());
        let text = error_body(response).await;
        let wait = match retryable {
            true => attempts.next_wait(&endpoint.retry, asked),
            false => None,
        };
        match wait {
            Some(wait) => backoff(endpoint, status.as_str(), &endpoint.scrub(&text), wait).await,
            None => return Err(status_error(endpoint, status, &text, attempts)),
        }
    }
}

/// A success response that is not an event stream (a server that ignored `"stream": true`,
/// or sent garbage) is an error that shows what came instead.
async fn expect_event_stream(
    endpoint: &Endpoint,
    response: reqwest::Response,
) -> Result<reqwest::Response, ModelError> {
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if content_type.is_empty() || content_type.contains("event-stream") {
        return Ok(response);
    }
    let body = error_body(response).await;
    let shown: String = body.chars().take(200).collect();
    Err(ModelError::new(
        endpoint.name.clone(),
        ModelErrorKind::Stream,
        format!(
            "{} answered `{content_type}` instead of a stream of server-sent events; check that the server supports streaming. It sent: {}",
            endpoint.url,
            endpoint.scrub(&shown)
        ),
    ))
}

async fn backoff(endpoint: &Endpoint, what: &str, detail: &str, wait: Duration) {
    tracing::warn!(
        model = %endpoint.name,
        failure = what,
        detail,
        wait_ms = wait.as_millis() as u64,
        "model request failed; retrying"
    );
    tokio::time::sleep(wait).await;
}

fn stream_failure(
    endpoint: &Endpoint,
    error: &EventStreamError<BodyError>,
) -> (ModelErrorKind, String) {
    match error {
        EventStreamError::Transport(BodyError::TooLarge(why)) => (
            ModelErrorKind::Stream,
            format!(
                "{why}; raise it on the model client if this provider's answers are that large"
            ),
        ),
        EventStreamError::Transport(BodyError::Transport(e)) if e.is_timeout() => (
            ModelErrorKind::Timeout,
            format!(
                "no data within the read timeout: {}",
                endpoint.scrub(&error_chain(e))
            ),
        ),
        EventStreamError::Transport(BodyError::Transport(e)) => (
            ModelErrorKind::Stream,
            format!("the connection broke: {}", endpoint.scrub(&error_chain(e))),
        ),
        EventStreamError::Utf8(e) => (
            ModelErrorKind::Stream,
            format!("the stream is not UTF-8: {e}"),
        ),
        EventStreamError::Parser(e) => (
            ModelErrorKind::Stream,
            format!("the stream is not server-sent events: {e}"),
        ),
    }
}

fn broken(
    endpoint: &Endpoint,
    error: DecodeError,
    progress: &Progress,
    partial: Option<String>,
) -> ModelError {
    let arrived = progress.describe(partial);
    let retry_note = if progress.is_empty() {
        ""
    } else {
        "; not retried, since that output was already streamed"
    };
    ModelError::new(
        endpoint.name.clone(),
        error.kind,
        format!(
            "the stream from {} ended the turn early after {arrived}: {}{retry_note}",
            endpoint.url, error.message
        ),
    )
}
