//! What the providers share in mapping message parts to their shapes: reading a part's bytes,
//! and the error for a part a provider cannot take (which part, which provider, what to do).

use agentry_core::content::{Media, Part};
use agentry_core::{ModelError, ModelErrorKind, ModelStream};

/// Where in the conversation a part is, for errors.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place<'a> {
    /// A user message.
    User,
    /// A model turn sent back.
    Assistant,
    /// The result of a call of this tool.
    ToolResult(&'a str),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::User => f.write_str("a user message"),
            Place::Assistant => f.write_str("an assistant message"),
            Place::ToolResult(tool) => write!(f, "a result of tool `{tool}`"),
        }
    }
}

/// A part a provider cannot take, or whose bytes are missing: the request is not sent.
#[derive(Debug)]
pub(crate) struct Refusal(String);

impl Refusal {
    /// `provider` cannot take `part` at `place`; `advice` says what to do.
    pub(crate) fn new(provider: &str, part: &Part, place: Place<'_>, advice: &str) -> Self {
        Refusal(format!(
            "{provider} cannot take the {} part {} in {place}: {advice}",
            part.kind(),
            part.describe()
        ))
    }

    /// The error a model reports for it.
    pub(crate) fn into_error(self, model: &str) -> ModelError {
        ModelError::new(model, ModelErrorKind::InvalidRequest, self.0)
    }

    /// A stream that fails at once with this error.
    pub(crate) fn into_stream<'a>(self, model: &str) -> ModelStream<'a> {
        let error = self.into_error(model);
        Box::pin(futures::stream::once(async move { Err(error) }))
    }
}

/// A media part's bytes, or a refusal when only a reference to them is here (a store or a
/// durable runtime that did not load them back).
pub(crate) fn data_of<'m>(
    provider: &str,
    part: &Part,
    media: &'m Media,
    place: Place<'_>,
) -> Result<&'m [u8], Refusal> {
    media.data().ok_or_else(|| {
        Refusal::new(
            provider,
            part,
            place,
            "its bytes are not loaded (only their SHA-256 is here); load the run through the \
             store that holds them, or give the part as bytes",
        )
    })
}

/// A media part's bytes as base64 (see [`data_of`]).
pub(crate) fn base64_of(
    provider: &str,
    part: &Part,
    media: &Media,
    place: Place<'_>,
) -> Result<String, Refusal> {
    use base64::Engine as _;
    data_of(provider, part, media, place)
        .map(|d| base64::engine::general_purpose::STANDARD.encode(d))
}

/// A media part as a URL: its own, or a `data:` URL of its bytes.
#[cfg(feature = "openai")]
pub(crate) fn url_of(
    provider: &str,
    part: &Part,
    media: &Media,
    place: Place<'_>,
) -> Result<String, Refusal> {
    match &media.source {
        agentry_core::content::MediaSource::Url(url) => Ok(url.clone()),
        agentry_core::content::MediaSource::Bytes(_) => base64_of(provider, part, media, place)
            .map(|b| format!("data:{};base64,{b}", media.media_type)),
    }
}

/// A model turn sent back: its text, or a refusal naming its first media part (the providers
/// take text only in assistant turns).
pub(crate) fn assistant_text<'a>(
    provider: &str,
    content: &'a agentry_core::Content,
) -> Result<std::borrow::Cow<'a, str>, Refusal> {
    text_only(
        provider,
        content,
        Place::Assistant,
        "an assistant turn takes text only; drop the part from the history in a BeforeModel hook",
    )
}

/// The turn's stream for a request `body` built (or refused) for `endpoint`.
pub(crate) fn stream_or_refuse<'a, D, F>(
    endpoint: &'a crate::http::Endpoint,
    body: Result<serde_json::Value, Refusal>,
    decoder: F,
) -> ModelStream<'a>
where
    D: crate::http::Decoder + 'a,
    F: Fn() -> D + Send + 'a,
{
    match body {
        Ok(body) => {
            crate::http::turn_stream(endpoint, bytes::Bytes::from(body.to_string()), decoder)
        }
        Err(refusal) => refusal.into_stream(&endpoint.name),
    }
}

/// The parts a message that only takes text carries: its text, or a refusal naming the first
/// media part.
pub(crate) fn text_only<'a>(
    provider: &str,
    content: &'a agentry_core::Content,
    place: Place<'_>,
    advice: &str,
) -> Result<std::borrow::Cow<'a, str>, Refusal> {
    match content.media().next() {
        Some(part) => Err(Refusal::new(provider, part, place, advice)),
        None => Ok(content.text()),
    }
}
