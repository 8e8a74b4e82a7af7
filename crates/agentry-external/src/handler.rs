//! One handler of a matcher group, whatever carries the event to it: a command, a persistent
//! process or a webhook; and the timeouts settings give in seconds.

use crate::command::{CommandSpec, PersistentSpec};
use crate::webhook::WebhookSpec;
use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// One handler of a matcher group: how an event reaches the hook.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandlerSpec {
    /// A command run once per event (`"type": "command"`), Claude Code's protocol.
    Command(CommandSpec),
    /// A long-lived process answering every event as JSON lines (`"type": "persistent"`).
    Persistent(PersistentSpec),
    /// A POST of the event to a URL (`"type": "http"`), answered like a command's stdout.
    Http(WebhookSpec),
}

impl HandlerSpec {
    /// How errors and events name the handler.
    pub fn display(&self) -> String {
        match self {
            HandlerSpec::Command(c) => c.display(),
            HandlerSpec::Persistent(p) => p.display(),
            HandlerSpec::Http(w) => w.display(),
        }
    }

    /// Its `if` rule, if it has one.
    pub(crate) fn condition(&self) -> Option<&str> {
        match self {
            HandlerSpec::Command(c) => c.condition.as_deref(),
            _ => None,
        }
    }

    /// The handler's own time limit, if it sets one.
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            HandlerSpec::Command(c) => c.timeout(),
            HandlerSpec::Persistent(p) => p.timeout_ms.map(Duration::from_millis),
            HandlerSpec::Http(w) => w.timeout(),
        }
    }

    /// The handler as settings write it (with its `type`).
    pub fn to_value(&self) -> serde_json::Value {
        let (kind, value) = match self {
            HandlerSpec::Command(c) => ("command", serde_json::to_value(c)),
            HandlerSpec::Persistent(p) => ("persistent", serde_json::to_value(p)),
            HandlerSpec::Http(w) => ("http", serde_json::to_value(w)),
        };
        let mut value = value.expect("a handler spec serializes");
        value["type"] = serde_json::Value::String(kind.into());
        value
    }
}

impl From<PersistentSpec> for HandlerSpec {
    fn from(spec: PersistentSpec) -> Self {
        HandlerSpec::Persistent(spec)
    }
}

impl From<CommandSpec> for HandlerSpec {
    fn from(spec: CommandSpec) -> Self {
        HandlerSpec::Command(spec)
    }
}

impl From<WebhookSpec> for HandlerSpec {
    fn from(spec: WebhookSpec) -> Self {
        HandlerSpec::Http(spec)
    }
}

impl HandlerSpec {
    /// What errors call this kind of handler.
    pub(crate) fn noun(&self) -> &'static str {
        match self {
            HandlerSpec::Http(_) => "webhook",
            _ => "command hook",
        }
    }

    /// True when this handler's own failure fails the event.
    pub(crate) fn fails_closed(&self) -> bool {
        match self {
            HandlerSpec::Http(w) => w.fail_closed,
            _ => false,
        }
    }

    /// The longest the handler may take on an event whose default time limit is `default`.
    pub(crate) fn worst_case(&self, default: Duration) -> Duration {
        let timeout = self.timeout().unwrap_or(default);
        match self {
            HandlerSpec::Http(w) => w.worst_case(timeout),
            _ => timeout,
        }
    }
}

/// Reads a timeout given in seconds (an integer or a fraction) as milliseconds.
pub(crate) fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let secs: Option<f64> = Option::deserialize(d)?;
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some((s * 1000.0).round() as u64)),
        Some(s) => Err(serde::de::Error::custom(format!(
            "timeout must be a positive number of seconds, not {s}"
        ))),
    }
}

pub(crate) fn as_seconds<S: serde::Serializer>(ms: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) if ms % 1000 == 0 => s.serialize_u64(ms / 1000),
        Some(ms) => s.serialize_f64(*ms as f64 / 1000.0),
        None => s.serialize_none(),
    }
}
