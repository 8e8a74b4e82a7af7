//! The errors of configuring a provider client.

/// What is wrong with a provider client's configuration. Errors of the calls themselves are
/// [`ModelError`](agentry_core::ModelError)s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No API key was configured where the provider needs one.
    #[error("{provider}: no API key: set `{var}` or pass one with `.api_key(...)`")]
    MissingApiKey {
        /// The provider.
        provider: &'static str,
        /// The environment variable that would hold it.
        var: &'static str,
    },
    /// The API key cannot travel in an HTTP header.
    #[error(
        "the API key (from `{var}` or `.api_key`) cannot be sent in an HTTP header: remove line breaks and other control characters"
    )]
    InvalidApiKey {
        /// The environment variable that would hold it.
        var: &'static str,
    },
    /// The base URL is not a usable http(s) URL.
    #[error(
        "base URL `{url}` is not usable: {reason}; give a full URL such as `https://api.openai.com/v1`"
    )]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header name or value given to `.header` or `.api_key_header` is not valid HTTP.
    #[error("header `{name}` is not a valid HTTP header name or value")]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
    /// The HTTP client could not be built (TLS set-up, for example).
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    /// A `provider:model` spec names no known provider or no model.
    #[error(
        "model spec `{spec}` is not understood: {reason}; write `provider:model`, such as `openai:gpt-4.1`, `openai-responses:o4-mini` or `anthropic:claude-sonnet-4-5`"
    )]
    UnknownSpec {
        /// The spec given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
}
