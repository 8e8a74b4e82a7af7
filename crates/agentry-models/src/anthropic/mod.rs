//! The Anthropic Messages API client.

mod encode;
mod stream;

use crate::Error;
use crate::http::{Endpoint, EnvNames, HttpConfig, KeyHeader, shared_builder_methods};
use crate::params::merged;
use agentry_core::{Model, ModelParams, ModelRequest, ModelStream};
use reqwest::header::HeaderName;
use stream::MessagesDecoder;

/// The variables an Anthropic client reads.
const ENV: EnvNames = EnvNames {
    api_key: "ANTHROPIC_API_KEY",
    base_url: "ANTHROPIC_BASE_URL",
};

/// Anthropic's own API (the client adds `/v1/messages`).
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version the client speaks.
const API_VERSION: &str = "2023-06-01";

/// A Claude model behind the Anthropic Messages API (`POST {base}/v1/messages`), streamed.
///
/// Streams text, extended thinking (with the signature and any redacted blocks kept verbatim
/// and sent back in later turns, as the API requires when tools are used), tool calls
/// assembled from `input_json_delta` pieces, usage with prompt-caching figures, and the stop
/// reason. Tool results go back as `tool_result` blocks in a user turn.
///
/// ```no_run
/// # fn main() -> Result<(), agentry_models::Error> {
/// use agentry_models::Anthropic;
/// // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
/// let claude = Anthropic::builder_from_env("claude-sonnet-4-5")
///     .thinking(4096)
///     .prompt_caching(true)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Anthropic {
    model: String,
    endpoint: Endpoint,
    params: ModelParams,
    max_tokens: u32,
    thinking_budget: Option<u32>,
    prompt_caching: bool,
}

/// Configures an [`Anthropic`] client.
#[derive(Debug)]
pub struct AnthropicBuilder {
    model: String,
    http: HttpConfig,
    params: ModelParams,
    max_tokens: u32,
    thinking_budget: Option<u32>,
    prompt_caching: bool,
}

impl Anthropic {
    /// A client for Anthropic's API with nothing read from the environment.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder::new(model.into(), http_default())
    }

    /// A builder preset from the environment: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`.
    pub fn builder_from_env(model: impl Into<String>) -> AnthropicBuilder {
        let mut http = http_default();
        http.read_env(ENV);
        AnthropicBuilder::new(model.into(), http)
    }

    /// A client configured from the environment.
    pub fn from_env(model: impl Into<String>) -> Result<Anthropic, Error> {
        Self::builder_from_env(model).build()
    }
}

fn http_default() -> HttpConfig {
    let mut http = HttpConfig::new(
        DEFAULT_BASE_URL,
        KeyHeader::Named(HeaderName::from_static("x-api-key")),
    );
    http.header("anthropic-version", API_VERSION);
    http
}

impl Model for Anthropic {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let params = merged(&self.params, &request.params);
        crate::parts::stream_or_refuse(
            &self.endpoint,
            encode::body(self, request, &params),
            MessagesDecoder::default,
        )
    }
}

impl AnthropicBuilder {
    fn new(model: String, http: HttpConfig) -> Self {
        AnthropicBuilder {
            model,
            http,
            params: ModelParams::default(),
            max_tokens: 4096,
            thinking_budget: None,
            prompt_caching: false,
        }
    }

    shared_builder_methods!();

    /// The output limit when the request sets none (the API requires one; default 4096).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// Turns on extended thinking with this token budget (at least 1024; the output limit is
    /// raised above it when needed).
    pub fn thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// Marks the system prompt, the tools and the conversation so far as cacheable
    /// (`cache_control: ephemeral`); usage then reports cache writes and reads.
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Adds an `anthropic-beta` flag.
    pub fn beta(self, flag: &str) -> Self {
        self.header("anthropic-beta", flag)
    }

    /// The client. Fails without an API key, or when the base URL or a header is invalid.
    pub fn build(self) -> Result<Anthropic, Error> {
        if self.http.api_key.is_none() {
            return Err(Error::MissingApiKey {
                provider: "anthropic",
                var: ENV.api_key,
            });
        }
        let endpoint = Endpoint::new(
            format!("anthropic:{}", self.model),
            &self.http,
            "/v1/messages",
            ENV,
        )?;
        Ok(Anthropic {
            model: self.model,
            endpoint,
            params: self.params,
            max_tokens: self.max_tokens,
            thinking_budget: self.thinking_budget,
            prompt_caching: self.prompt_caching,
        })
    }
}
