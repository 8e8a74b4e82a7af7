//! What one delivery sends besides the body: its headers and its signing key, resolved from the
//! environment at each delivery.

use super::signing::SigningKey;
use super::spec::WebhookSpec;
use agentry_core::env_template::{self, Syntax, Unset};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// What one delivery sends: the resolved headers and the signing key, made once for all tries.
pub(super) struct Prepared {
    /// The headers, their values resolved (and marked sensitive).
    pub(super) headers: HeaderMap,
    /// The key that signs each try, when the spec has a secret.
    pub(super) key: Option<SigningKey>,
}

/// Resolves the spec's header and secret templates from the environment. An error names the
/// header or the secret and the variable, never a value.
pub(super) fn prepare(spec: &WebhookSpec) -> Result<Prepared, String> {
    let mut headers = HeaderMap::new();
    for (name, template) in &spec.headers {
        let allowed = |var: &str| spec.allowed_env_vars.iter().any(|a| a == var);
        // A variable `allowedEnvVars` does not list is sent empty, as Claude Code does.
        let resolve = |var: &str| match allowed(var) {
            true => env_template::from_env(var),
            false => Some(String::new()),
        };
        let value =
            env_template::expand(template, Syntax::SHELL, resolve).map_err(|unset: Unset| {
                format!(
                    "header `{name}` needs the environment variable `{}`, which is not set",
                    unset.names.join("`, `")
                )
            })?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            format!("header `{name}` is not a valid header value once its variables are expanded")
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let key = match &spec.secret {
        None => None,
        Some(template) => {
            if env_template::references(template, Syntax::SHELL).is_empty() {
                return Err("`secret` must name the environment variable that holds it (\"${HOOK_SECRET}\")".into());
            }
            let secret = env_template::expand(template, Syntax::SHELL, env_template::from_env)
                .map_err(|unset: Unset| {
                    format!(
                        "the secret needs the environment variable `{}`, which is not set",
                        unset.names.join("`, `")
                    )
                })?;
            let key = SigningKey::parse(&secret).map_err(|e| {
                format!("the secret in `{template}` {e}: a Standard Webhooks secret is `whsec_` and base64")
            })?;
            Some(key)
        }
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(Prepared { headers, key })
}
