//! [`Redactor`]: masks secrets (common API-key shapes and patterns of your own) in what runs
//! report, and optionally in what tools receive and return.

use agentry_core::Redact;
use agentry_core::hooks::{
    AfterTool, BeforeTool, Events, Hook, HookCtx, HookExt, HookRegistration, HookResult, IntoHook,
};
use agentry_core::redact::redact_value;
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

/// The shapes of secrets masked unless [`Redactor::without_defaults`] is used: the API keys and
/// tokens of common providers, private keys, and `key = value` assignments of secret-looking
/// names (the name is kept, the value masked).
pub const DEFAULT_PATTERNS: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    (
        "OpenAI / Anthropic key",
        r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    ),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("Stripe key", r"\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    (
        "JSON Web Token",
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    (
        "bearer token",
        r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*",
    ),
    (
        "secret assignment",
        r#"(?i)(?P<keep>\b(?:api[_-]?key|secret|password|passwd|access[_-]?token|auth[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',;]{6,}"#,
    ),
];

/// The text that replaces a secret unless [`Redactor::mask`] sets another.
pub const DEFAULT_MASK: &str = "[REDACTED]";

/// Masks secrets: common API-key shapes ([`DEFAULT_PATTERNS`]), regular expressions of your own,
/// and exact values (such as the keys in your environment).
///
/// Give it to the runtime with [`Runtime::redact`](crate::Runtime::redact): every event a run
/// streams or stores, and everything the built-in [`Telemetry`](super::Telemetry) and
/// [`Recorder`](super::Recorder) keep, is masked. What the model and the tools receive does not
/// change unless asked: [`mask_tool_inputs`](Self::mask_tool_inputs) and
/// [`mask_tool_results`](Self::mask_tool_results) make it a hook that masks them too (register it
/// with `.with(redactor)`).
///
/// ```
/// use agentry::builtins::Redactor;
/// use agentry::Redact;
///
/// let r = Redactor::new()
///     .pattern(r"acme_[0-9a-f]{16}")
///     .unwrap()
///     .secret("hunter2-but-longer");
/// assert_eq!(
///     r.redact("key sk-proj-abcdefghijklmnopqrstuvwx, id acme_0123456789abcdef"),
///     "key [REDACTED], id [REDACTED]"
/// );
/// assert_eq!(r.redact("password: hunter2-but-longer"), "password: [REDACTED]");
/// assert!(matches!(r.redact("nothing here"), std::borrow::Cow::Borrowed(_)));
/// ```
#[derive(Clone)]
pub struct Redactor {
    patterns: Vec<String>,
    compiled: Arc<Regex>,
    mask: Arc<str>,
    mask_inputs: bool,
    mask_results: bool,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The patterns may hold exact secrets: show only how many there are.
        f.debug_struct("Redactor")
            .field("patterns", &self.patterns.len())
            .field("mask", &self.mask)
            .field("mask_tool_inputs", &self.mask_inputs)
            .field("mask_tool_results", &self.mask_results)
            .finish()
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new()
    }
}

impl Redactor {
    /// The default patterns ([`DEFAULT_PATTERNS`]).
    pub fn new() -> Self {
        let patterns = DEFAULT_PATTERNS
            .iter()
            .map(|(_, p)| p.to_string())
            .collect();
        Redactor::from_patterns(patterns).expect("the default patterns compile")
    }

    /// No pattern at all: only what you add.
    pub fn without_defaults() -> Self {
        Redactor::from_patterns(Vec::new()).expect("an empty pattern list compiles")
    }

    fn from_patterns(patterns: Vec<String>) -> Result<Self, regex::Error> {
        Ok(Redactor {
            compiled: Arc::new(compile(&patterns)?),
            patterns,
            mask: Arc::from(DEFAULT_MASK),
            mask_inputs: false,
            mask_results: false,
        })
    }

    fn with_pattern(mut self, pattern: String) -> Result<Self, regex::Error> {
        self.patterns.push(pattern);
        self.compiled = Arc::new(compile(&self.patterns)?);
        Ok(self)
    }

    /// Also masks what matches the regular expression `pattern` (Rust `regex` syntax). A named
    /// group `keep` is kept, the rest of the match masked: `(?P<keep>token=)\w+`.
    ///
    /// # Errors
    /// When `pattern` does not compile; the error names it.
    pub fn pattern(self, pattern: &str) -> Result<Self, RedactorError> {
        Regex::new(pattern).map_err(|e| RedactorError {
            pattern: pattern.to_string(),
            message: e.to_string(),
        })?;
        self.with_pattern(format!("(?:{pattern})"))
            .map_err(|e| RedactorError {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })
    }

    /// Also masks this exact value wherever it appears (values shorter than 6 characters are
    /// ignored: they would mask ordinary words).
    pub fn secret(self, value: impl AsRef<str>) -> Self {
        let value = value.as_ref();
        if value.chars().count() < 6 {
            return self;
        }
        self.with_pattern(regex::escape(value))
            .expect("an escaped literal compiles")
    }

    /// Also masks the values of these environment variables, when set (e.g. `OPENAI_API_KEY`).
    pub fn secrets_from_env<I, S>(self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        names
            .into_iter()
            .fold(self, |r, name| match std::env::var(name.as_ref()) {
                Ok(value) => r.secret(value),
                Err(_) => r,
            })
    }

    /// The text that replaces a secret (default `[REDACTED]`).
    pub fn mask(mut self, mask: impl Into<String>) -> Self {
        self.mask = Arc::from(mask.into());
        self
    }

    /// As a hook: tools receive their input with secrets masked (BeforeTool, run last, after
    /// every other hook has seen the real input).
    pub fn mask_tool_inputs(mut self, on: bool) -> Self {
        self.mask_inputs = on;
        self
    }

    /// As a hook: the model sees tool results with secrets masked (AfterTool, run first, so
    /// every other hook sees the masked result).
    pub fn mask_tool_results(mut self, on: bool) -> Self {
        self.mask_results = on;
        self
    }
}

/// One regex of all patterns, each in its own group, so one pass finds every secret.
fn compile(patterns: &[String]) -> Result<Regex, regex::Error> {
    if patterns.is_empty() {
        return Regex::new(r"[^\s\S]");
    }
    let alternation: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
    // Several patterns name a `keep` group; regex allows a name once, so number them apart.
    let mut n = 0;
    let joined = alternation.join("|");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("(?P<keep>") {
        out.push_str(&rest[..at]);
        out.push_str(&format!("(?P<keep{n}>"));
        n += 1;
        rest = &rest[at + "(?P<keep>".len()..];
    }
    out.push_str(rest);
    Regex::new(&out)
}

impl Redact for Redactor {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.compiled.replace_all(text, |caps: &Captures| {
            let kept = caps
                .iter()
                .skip(1)
                .zip(self.compiled.capture_names().skip(1))
                .find_map(|(m, name)| m.filter(|_| name.is_some_and(|n| n.starts_with("keep"))))
                .map_or("", |m| m.as_str());
            format!("{kept}{}", self.mask)
        })
    }
}

/// A pattern given to [`Redactor::pattern`] that does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("redaction pattern `{pattern}` is not a valid regular expression: {message}")]
pub struct RedactorError {
    /// The pattern.
    pub pattern: String,
    /// The compiler's message.
    pub message: String,
}

/// The masking hook of a [`Redactor`] (a plugin over BeforeTool and AfterTool).
struct RedactorHook(Redactor);

impl IntoHook for Redactor {
    /// The masking of tool inputs and results, when asked for (else a hook that wants nothing).
    /// At the lowest priority: BeforeTool runs it last, AfterTool first.
    fn into_hook(self) -> HookRegistration {
        RedactorHook(self).named("redactor").priority(i32::MIN + 1)
    }
}

impl Hook for RedactorHook {
    fn wants(&self) -> Events {
        let mut events = Events::empty();
        if self.0.mask_inputs {
            events |= Events::BEFORE_TOOL;
        }
        if self.0.mask_results {
            events |= Events::AFTER_TOOL;
        }
        events
    }

    fn before_tool(
        &self,
        mut ev: BeforeTool,
        _ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeTool>> + Send {
        redact_value(&self.0, &mut ev.input);
        async move { Ok(ev) }
    }

    fn after_tool(
        &self,
        mut ev: AfterTool,
        _ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterTool>> + Send {
        agentry_core::redact::redact_content(&self.0, &mut ev.content);
        async move { Ok(ev) }
    }
}
