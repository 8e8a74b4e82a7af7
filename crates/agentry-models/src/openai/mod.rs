//! OpenAI and OpenAI-compatible servers: Chat Completions ([`OpenAi`]) and the Responses API
//! ([`OpenAiResponses`]).

mod chat;
mod chat_stream;
mod responses;
mod responses_stream;

pub use chat::{OpenAi, OpenAiBuilder};
pub use responses::{OpenAiResponses, OpenAiResponsesBuilder};

use crate::Error;
use crate::http::{EnvNames, HttpConfig, KeyHeader, env_var};

/// The variables an OpenAI client reads.
pub(crate) const ENV: EnvNames = EnvNames {
    api_key: "OPENAI_API_KEY",
    base_url: "OPENAI_BASE_URL",
};

/// OpenAI's own API.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Settings for OpenAI's own API, nothing from the environment.
pub(crate) fn http_default() -> HttpConfig {
    HttpConfig::new(DEFAULT_BASE_URL, KeyHeader::Bearer)
}

/// Settings from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID` and
/// `OPENAI_PROJECT_ID`.
pub(crate) fn http_from_env() -> HttpConfig {
    let mut http = http_default();
    http.read_env(ENV);
    if let Some(org) = env_var("OPENAI_ORG_ID") {
        http.header("OpenAI-Organization", &org);
    }
    if let Some(project) = env_var("OPENAI_PROJECT_ID") {
        http.header("OpenAI-Project", &project);
    }
    http
}

/// OpenAI's own API needs a key; self-hosted servers often do not.
pub(crate) fn require_key(http: &HttpConfig) -> Result<(), Error> {
    if http.api_key.is_none() && http.base_url.contains("api.openai.com") {
        return Err(Error::MissingApiKey {
            provider: "openai",
            var: ENV.api_key,
        });
    }
    Ok(())
}

/// A structured output's schema under the name both OpenAI APIs want: `name`, `schema`,
/// `strict` (off: the runtime validates the answer, and strict mode rejects common schemas).
pub(crate) fn named_schema(
    schema: &serde_json::Value,
) -> serde_json::Map<String, serde_json::Value> {
    let mut named = serde_json::Map::new();
    named.insert("name".into(), "output".into());
    named.insert("schema".into(), schema.clone());
    named.insert("strict".into(), false.into());
    named
}
