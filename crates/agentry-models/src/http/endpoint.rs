//! One provider endpoint, ready to post: the client, the URL, the headers with the credentials.

use super::config::{HttpConfig, KeyHeader};
use super::retry::RetryPolicy;
use crate::Error;
use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};

/// The environment variables a provider reads, named in errors that tell the user what to fix.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EnvNames {
    /// The variable holding the API key.
    pub(crate) api_key: &'static str,
    /// The variable holding the base URL.
    pub(crate) base_url: &'static str,
}

/// Where and how one provider client posts its requests.
pub(crate) struct Endpoint {
    /// `provider:model`, the name errors carry.
    pub(crate) name: String,
    pub(crate) url: reqwest::Url,
    pub(crate) env: EnvNames,
    pub(crate) retry: RetryPolicy,
    /// What one response may hold.
    pub(crate) limits: super::BodyLimits,
    client: reqwest::Client,
    headers: HeaderMap,
    /// Kept only to scrub the key from messages a server echoes back.
    api_key: Option<SecretString>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("retry", &self.retry)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl Endpoint {
    /// An endpoint at `path` below the configured base URL.
    pub(crate) fn new(
        name: String,
        http: &HttpConfig,
        path: &str,
        env: EnvNames,
    ) -> Result<Endpoint, Error> {
        let client = http.client()?;
        let base = http.base_url.trim_end_matches('/');
        let url = format!("{base}{path}");
        let mut url = reqwest::Url::parse(&url).map_err(|e| Error::InvalidBaseUrl {
            url: http.base_url.clone(),
            reason: e.to_string(),
        })?;
        if !http.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&http.query);
        }
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::InvalidBaseUrl {
                url: http.base_url.clone(),
                reason: "the scheme must be http or https".into(),
            });
        }
        let mut headers = http.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = &http.api_key {
            let (name, value) = match &http.key_header {
                KeyHeader::Bearer => (
                    AUTHORIZATION,
                    format!("Bearer {}", key.expose_secret().trim()),
                ),
                KeyHeader::Named(name) => (name.clone(), key.expose_secret().trim().to_owned()),
            };
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| Error::InvalidApiKey { var: env.api_key })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(Endpoint {
            name,
            url,
            env,
            retry: http.retry.clone(),
            limits: http.limits,
            client,
            headers,
            api_key: http.api_key.clone(),
        })
    }

    /// Posts `body` once.
    pub(crate) async fn post(&self, body: Bytes) -> Result<reqwest::Response, reqwest::Error> {
        self.client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
    }

    /// `text` with the API key, if it appears, replaced by `[redacted]`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if !key.expose_secret().trim().is_empty() => {
                text.replace(key.expose_secret().trim(), "[redacted]")
            }
            _ => text.to_owned(),
        }
    }
}
