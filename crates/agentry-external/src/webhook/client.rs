//! The HTTP client the webhooks of registered hooks share, and errors told with their causes.

use std::sync::OnceLock;
use std::time::Duration;

/// The client every webhook of registered hooks shares (keep-alive connections), made at the
/// first delivery.
#[derive(Default)]
pub(crate) struct WebhookClient(OnceLock<Result<reqwest::Client, String>>);

impl WebhookClient {
    /// The client, made now if this is the first delivery; an error when it cannot be made.
    pub(crate) fn get(&self) -> Result<&reqwest::Client, String> {
        self.0
            .get_or_init(|| {
                reqwest::Client::builder()
                    // A redirect would carry the signed body elsewhere: a 3xx is an answer.
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("agentry-external/", env!("CARGO_PKG_VERSION")))
                    .pool_idle_timeout(Duration::from_secs(90))
                    .build()
                    .map_err(|e| format!("no HTTP client: {}", chain(&e)))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// An error with its sources, as one line: reqwest's own message is only the outermost.
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    agentry_core::error_with_causes(e)
}
