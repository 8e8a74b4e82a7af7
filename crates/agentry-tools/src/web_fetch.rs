//! `WebFetch`: a web page's text.

use crate::Error;
use agentry_core::{StructTool, ToolCtx, ToolFailure};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::OnceLock;
use std::time::Duration;

/// The input of [`WebFetch`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The `http` or `https` URL to fetch.
    pub url: String,
    /// What to look for in the page. It is shown at the top of the result, above the page's
    /// text, for you to apply to it.
    pub prompt: String,
}

/// The width HTML is laid out to as text.
const TEXT_WIDTH: usize = 100;

/// Fetches a URL and returns its body as text, as Claude Code's `WebFetch` does, without the
/// secondary model: `prompt` is recorded in the result's header for the calling model to apply.
///
/// Only `http` and `https` URLs; at most 5 redirects; a time limit for the whole fetch (default
/// 30 s) and a size cap on the body (default 2 MiB; a longer body is cut with a marker). HTML is
/// converted to readable text; other text types are returned as they are; binary types are
/// refused.
#[derive(Debug)]
pub struct WebFetch {
    timeout: Duration,
    max_bytes: usize,
    approval: bool,
    client: OnceLock<reqwest::Client>,
}

impl Clone for WebFetch {
    fn clone(&self) -> Self {
        WebFetch {
            timeout: self.timeout,
            max_bytes: self.max_bytes,
            approval: self.approval,
            client: OnceLock::new(),
        }
    }
}

impl Default for WebFetch {
    fn default() -> Self {
        Self::new()
    }
}

impl WebFetch {
    /// The default time limit of one fetch.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default cap on the body, in bytes.
    pub const DEFAULT_MAX_BYTES: usize = 2 * 1024 * 1024;

    /// `WebFetch` with the default limits.
    pub fn new() -> Self {
        WebFetch {
            timeout: Self::DEFAULT_TIMEOUT,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            approval: false,
            client: OnceLock::new(),
        }
    }

    /// The time limit of one fetch, from connecting to the body's end.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit.max(Duration::from_millis(1));
        self
    }

    /// The most bytes of a body read; the rest is cut with a marker.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// Whether each call waits for a person's approval (default: no).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }

    /// The HTTP client, made on first use.
    fn client(&self) -> Result<&reqwest::Client, Error> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(5))
            .timeout(self.timeout)
            .user_agent(concat!("agentry-tools/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(Error::HttpClient)?;
        Ok(self.client.get_or_init(|| client))
    }

    /// Fetches `input.url`.
    async fn fetch(&self, input: &WebFetchInput) -> Result<String, ToolFailure> {
        let url = reqwest::Url::parse(&input.url).map_err(|e| {
            ToolFailure::new(format!(
                "`{}` is not a valid URL ({e}); give a full http or https URL",
                input.url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolFailure::new(format!(
                "`{}` is a `{}` URL; WebFetch fetches only http and https URLs",
                input.url,
                url.scheme()
            )));
        }
        let client = self.client()?;
        let failed = |e: reqwest::Error| {
            let why = if e.is_timeout() {
                format!(
                    "it took longer than the {} ms limit of a fetch",
                    self.timeout.as_millis()
                )
            } else {
                e.to_string()
            };
            ToolFailure::new(format!("fetching `{url}` failed: {why}"))
        };
        let mut response = client.get(url.clone()).send().await.map_err(failed)?;
        let status = response.status();
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            let room = self.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let excerpt: String = text.chars().take(500).collect();
            return Err(ToolFailure::new(format!(
                "`{final_url}` answered {status}: {excerpt}"
            )));
        }
        let text = as_text(&body, &content_type).ok_or_else(|| {
            ToolFailure::new(format!(
                "`{final_url}` returned `{content_type}`, which is not text; WebFetch returns text and HTML only"
            ))
        })?;
        let mut out = format!(
            "URL: {final_url}\nStatus: {status}\nContent-Type: {}\nPrompt: {}\n\n{text}",
            if content_type.is_empty() {
                "(none)"
            } else {
                &content_type
            },
            input.prompt
        );
        if cut {
            out.push_str(&format!(
                "\n[the body was cut at {} bytes, the size cap of a fetch]",
                self.max_bytes
            ));
        }
        Ok(out)
    }
}

/// The body as text, or `None` when its type is not text.
fn as_text(body: &[u8], content_type: &str) -> Option<String> {
    let ct = content_type.to_ascii_lowercase();
    if ct.contains("html") {
        return Some(
            html2text::from_read(body, TEXT_WIDTH)
                .unwrap_or_else(|_| String::from_utf8_lossy(body).into_owned()),
        );
    }
    let textual = ct.is_empty()
        || ct.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "toml", "csv"]
            .iter()
            .any(|t| ct.contains(t));
    textual.then(|| String::from_utf8_lossy(body).into_owned())
}

impl StructTool for WebFetch {
    type Input = WebFetchInput;
    type Output = String;
    const NAME: &'static str = "WebFetch";
    const DESCRIPTION: &'static str = "Fetches a web page (http or https) and returns its text: \
        HTML is converted to readable text. `prompt` says what to look for; it is shown above the \
        page's text. Large pages are cut at a size cap.";

    async fn run(&self, input: WebFetchInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let limit = self.timeout;
        match tokio::time::timeout(limit, self.fetch(&input)).await {
            Ok(result) => result,
            Err(_) => Err(ToolFailure::new(format!(
                "fetching `{}` took longer than the {} ms limit of a fetch",
                input.url,
                limit.as_millis()
            ))),
        }
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }

    /// The fetch's own limit, and a little more: the fetch's own limit fires first.
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout + Duration::from_secs(5))
    }
}
