//! One webhook built in Rust: an event, a matcher and a URL, registered like any hook.

use super::spec::WebhookSpec;
use crate::claude::EventName;
use crate::error::SettingsError;
use crate::hooks::CommandHooks;
use agentry_core::hooks::{HookRegistration, IntoHook};
use std::path::PathBuf;
use std::time::Duration;

/// One webhook built in Rust: each matching event is POSTed to a URL (see [`WebhookSpec`] for
/// what is sent and how the answer counts).
///
/// ```
/// use agentry_core::hooks::Hooks;
/// use agentry_external::{EventName, Webhook};
/// use std::time::Duration;
/// let mut hooks = Hooks::new();
/// hooks.add(
///     Webhook::new(EventName::PreToolUse, "https://hooks.example.com/guard")
///         .matcher("Bash|Write")
///         .secret("${GUARD_WEBHOOK_SECRET}")
///         .header("Authorization", "Bearer ${GUARD_TOKEN}")
///         .allow_env_var("GUARD_TOKEN")
///         .timeout(Duration::from_secs(5)),
/// );
/// ```
pub struct Webhook {
    event: EventName,
    matcher: String,
    spec: WebhookSpec,
    project_dir: Option<PathBuf>,
}

impl Webhook {
    /// Posts every `event` (every tool, or source) to `url`.
    pub fn new(event: EventName, url: impl Into<String>) -> Self {
        Webhook::with_spec(event, WebhookSpec::new(url))
    }

    /// Delivers `event` as `spec` says.
    pub fn with_spec(event: EventName, spec: WebhookSpec) -> Self {
        Webhook {
            event,
            matcher: String::new(),
            spec,
            project_dir: None,
        }
    }

    /// Only where `matcher` applies (see [`Matcher`](crate::Matcher)). An invalid regular
    /// expression, or an unusable spec, makes registration panic with the error; use
    /// [`into_hooks`](Self::into_hooks) to handle it.
    pub fn matcher(mut self, matcher: impl Into<String>) -> Self {
        self.matcher = matcher.into();
        self
    }

    /// Adds a header (see [`WebhookSpec::header`]).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.spec = self.spec.header(name, value);
        self
    }

    /// Lets header values use the environment variable `name`.
    pub fn allow_env_var(mut self, name: impl Into<String>) -> Self {
        self.spec = self.spec.allow_env_var(name);
        self
    }

    /// Signs deliveries with the secret in the environment variable `template` names
    /// (`"${HOOK_SECRET}"`).
    pub fn secret(mut self, template: impl Into<String>) -> Self {
        self.spec = self.spec.secret(template);
        self
    }

    /// The time limit of one delivery (default: the event's, 10 minutes for most).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec = self.spec.with_timeout(timeout);
        self
    }

    /// Tries a failed delivery again up to `retries` times, where the event decides nothing.
    pub fn retries(mut self, retries: u32) -> Self {
        self.spec = self.spec.retries(retries);
        self
    }

    /// A failed delivery fails the event, and the run.
    pub fn fail_closed(mut self) -> Self {
        self.spec = self.spec.fail_closed();
        self
    }

    /// The project root, the payload's `cwd` (default: the current directory).
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// The hook as a one-webhook [`CommandHooks`], to configure further; an error when the spec
    /// cannot be used (not an http(s) URL, a secret that is not a variable reference, ...).
    pub fn into_hooks(self) -> Result<CommandHooks, SettingsError> {
        let at = format!("{} webhook", self.event);
        self.spec
            .check()
            .map_err(|(field, message)| SettingsError::new(format!("{at}.{field}"), message))?;
        for warning in self.spec.warnings(self.event) {
            tracing::warn!(hook = %self.spec.display(), "{at}.{warning}");
        }
        let name = format!("webhook `{}`", self.spec.display());
        CommandHooks::single(self.event, &self.matcher, self.spec, name, self.project_dir)
    }
}

impl IntoHook for Webhook {
    fn into_hook(self) -> HookRegistration {
        match self.into_hooks() {
            Ok(hooks) => hooks.into_hook(),
            Err(e) => panic!("{e}"),
        }
    }
}
