//! What every provider client is configured with: where it sends requests, with which
//! credentials, and how patiently.

use super::endpoint::EnvNames;
use super::retry::RetryPolicy;
use crate::Error;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;
use std::time::Duration;

/// How the API key travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and compatible servers).
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    Bearer,
    /// The key as the value of a header of its own (`x-api-key`, Azure's `api-key`).
    Named(HeaderName),
}

/// The HTTP settings a provider builder collects (see the builders' methods).
#[derive(Clone, Debug)]
pub(crate) struct HttpConfig {
    pub(crate) base_url: String,
    pub(crate) api_key: Option<SecretString>,
    pub(crate) key_header: KeyHeader,
    pub(crate) headers: HeaderMap,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) limits: super::BodyLimits,
    pub(crate) client: Option<reqwest::Client>,
    /// A header that could not be used, reported by `build`.
    pub(crate) bad_header: Option<String>,
}

impl HttpConfig {
    pub(crate) fn new(base_url: &str, key_header: KeyHeader) -> Self {
        HttpConfig {
            base_url: base_url.to_owned(),
            api_key: None,
            key_header,
            headers: HeaderMap::new(),
            query: Vec::new(),
            timeout: None,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
            limits: super::BodyLimits::default(),
            client: None,
            bad_header: None,
        }
    }

    /// Adds a header; values of headers that carry credentials are marked sensitive, so they
    /// never show in Debug output.
    pub(crate) fn header(&mut self, name: &str, value: &str) {
        let parsed = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        );
        match parsed {
            (Ok(name), Ok(mut value)) => {
                value.set_sensitive(is_sensitive(name.as_str()));
                self.headers.insert(name, value);
            }
            _ => self.bad_header = Some(name.to_owned()),
        }
    }

    /// Takes the base URL and the API key from the provider's environment variables, where set.
    pub(crate) fn read_env(&mut self, names: EnvNames) {
        if let Some(url) = env_var(names.base_url) {
            self.base_url = url;
        }
        if let Some(key) = env_var(names.api_key) {
            self.api_key = Some(key.into());
        }
    }

    /// The reqwest client: the one given, or a new one with the timeouts.
    pub(crate) fn client(&self) -> Result<reqwest::Client, Error> {
        if let Some(name) = &self.bad_header {
            return Err(Error::InvalidHeader { name: name.clone() });
        }
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .read_timeout(self.read_timeout);
        if let Some(timeout) = self.timeout {
            builder = builder.timeout(timeout);
        }
        builder.build().map_err(|e| Error::Client(e.to_string()))
    }
}

/// A non-empty environment variable.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn is_sensitive(name: &str) -> bool {
    name == "authorization"
        || name == "cookie"
        || name.contains("key")
        || name.contains("token")
        || name.contains("secret")
}

/// The builder methods every provider shares, written once. The builder has the fields
/// `http: HttpConfig` and `params: ModelParams`.
macro_rules! shared_builder_methods {
    () => {
        /// Default parameters; those of the agent or request win where both are set. Fields in
        /// `extra` (provider options such as `seed`, `reasoning_effort` or `top_k`) go into the
        /// request body as they are.
        pub fn params(mut self, params: agentry_core::ModelParams) -> Self {
            self.params = params;
            self
        }

        /// Sets the base URL (a self-hosted server, a proxy, an Azure deployment).
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.http.base_url = url.into();
            self
        }

        /// Sets the API key. It is kept secret: it never appears in Debug output, logs, events
        /// or errors.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.http.api_key = Some(secrecy::SecretString::from(key.into()));
            self
        }

        /// Sends the API key in a header of this name instead of the provider's usual one (for
        /// example `api-key` for Azure OpenAI).
        pub fn api_key_header(mut self, name: &str) -> Self {
            match reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
                Ok(name) => self.http.key_header = $crate::http::KeyHeader::Named(name),
                Err(_) => self.http.bad_header = Some(name.to_owned()),
            }
            self
        }

        /// Adds a header to every request (organisation, project, beta flags, routing).
        /// Headers whose names mention a key, token, secret or cookie are kept out of Debug
        /// output like the API key.
        pub fn header(mut self, name: &str, value: &str) -> Self {
            self.http.header(name, value);
            self
        }

        /// Adds a query parameter to every request (for example Azure's `api-version`).
        pub fn query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.http.query.push((name.into(), value.into()));
            self
        }

        /// Sets the limit on a whole request, streaming included (default: none).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.timeout = Some(timeout);
            self
        }

        /// Sets the limit on opening a connection (default 10 s).
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.connect_timeout = timeout;
            self
        }

        /// Sets the longest silence allowed while waiting for the response or the next piece
        /// of the stream (default 300 s, for models that think long before they answer).
        pub fn read_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.http.read_timeout = timeout;
            self
        }

        /// Sets the retry policy for rate limits, server errors and dropped connections.
        pub fn retry(mut self, policy: $crate::RetryPolicy) -> Self {
            self.http.retry = policy;
            self
        }

        /// Sets the most bytes one server-sent event of a response may have (default
        /// [`DEFAULT_MAX_EVENT_BYTES`](crate::DEFAULT_MAX_EVENT_BYTES), 16 MiB): a longer one
        /// ends the turn with a stream error that names this limit, before it is held whole.
        ///
        /// # Panics
        /// When `bytes` is zero.
        pub fn max_event_bytes(mut self, bytes: usize) -> Self {
            assert!(bytes > 0, "an event limit must be more than zero bytes");
            self.http.limits.max_event_bytes = bytes;
            self
        }

        /// Sets the most bytes one streamed response may have (default
        /// [`DEFAULT_MAX_RESPONSE_BYTES`](crate::DEFAULT_MAX_RESPONSE_BYTES), 256 MiB): past
        /// it the turn ends with a stream error that names this limit.
        ///
        /// # Panics
        /// When `bytes` is zero.
        pub fn max_response_bytes(mut self, bytes: usize) -> Self {
            assert!(bytes > 0, "a response limit must be more than zero bytes");
            self.http.limits.max_response_bytes = bytes;
            self
        }

        /// Uses this reqwest client (shared connection pool, proxies, custom TLS). Its own
        /// timeouts apply instead of this builder's.
        pub fn http_client(mut self, client: reqwest::Client) -> Self {
            self.http.client = Some(client);
            self
        }
    };
}

pub(crate) use shared_builder_methods;
