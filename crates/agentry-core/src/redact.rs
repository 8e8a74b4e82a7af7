//! Redaction: masking secrets in what a run reports (its event stream, event history, hooks'
//! telemetry and records, logs) without changing what the run itself works with.
//!
//! A runtime configured with a [`Redact`] applies it to every [`RunEvent`] before it leaves the
//! run, and hands it to hooks through [`RunContext::redact`](crate::RunContext::redact), which
//! observers (telemetry, recorders, audit hooks) call on any text they keep. The history, the
//! model's requests and the tools' inputs are not touched: masking those is a separate choice
//! (the `Redactor` hook of the `agentry` crate can do it when asked).

use crate::content::{Blob, Content, MediaSource, Part};
use crate::{Message, RunEvent};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// Masks secrets in text.
pub trait Redact: Send + Sync + 'static {
    /// `text` with every secret masked; borrowed when there was none.
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
}

/// Masks every string in a JSON value, in place (object keys are kept).
pub fn redact_value(r: &dyn Redact, value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(masked) = r.redact(s) {
                *s = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(r, v)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(r, v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Masks the secrets of a string, in place (untouched when it holds none).
pub fn redact_string(r: &dyn Redact, s: &mut String) {
    if let Cow::Owned(masked) = r.redact(s) {
        *s = masked;
    }
}

/// Masks the secrets of every text part, and of every loaded plain-text file part (`text/*`
/// bytes that are UTF-8); images and audio are left as they are.
pub fn redact_content(r: &dyn Redact, content: &mut Content) {
    for part in content.parts_mut() {
        match part {
            Part::Text(t) => redact_string(r, t),
            Part::File(m) if m.is("text") => {
                let masked = match m.data().map(std::str::from_utf8) {
                    Some(Ok(text)) => match r.redact(text) {
                        Cow::Owned(masked) => masked,
                        Cow::Borrowed(_) => continue,
                    },
                    _ => continue,
                };
                m.source = MediaSource::Bytes(Blob::new(masked.into_bytes()));
            }
            _ => {}
        }
    }
}

/// A message with every secret masked: its text, its tool calls' arguments, its tool result.
pub fn redact_message(r: &dyn Redact, message: &Message) -> Message {
    let mut m = message.clone();
    match &mut m {
        Message::System { content } => redact_string(r, content),
        Message::User { content } => redact_content(r, content),
        Message::Assistant {
            content,
            tool_calls,
            thinking,
        } => {
            redact_content(r, content);
            if let Some(t) = thinking {
                redact_string(r, &mut t.text);
            }
            for c in tool_calls {
                redact_string(r, &mut c.arguments);
            }
        }
        Message::Tool(result) => redact_content(r, &mut result.content),
    }
    m
}

impl RunEvent {
    /// The event with every secret masked.
    ///
    /// Streamed text is masked piece by piece, so a secret split across two
    /// [`RunEvent::TextDelta`]s may pass; the complete turn's [`RunEvent::Message`] is masked
    /// whole.
    pub fn redacted(mut self, r: &dyn Redact) -> RunEvent {
        match &mut self {
            RunEvent::TextDelta { text, .. } | RunEvent::ThinkingDelta { text, .. } => {
                redact_string(r, text)
            }
            RunEvent::ToolStarted { input, .. } => redact_value(r, input),
            RunEvent::ToolFinished { result, .. } => redact_content(r, &mut result.content),
            RunEvent::StatePatch { patch, .. } => {
                let mut v = serde_json::to_value(&*patch).unwrap_or(Value::Null);
                redact_value(r, &mut v);
                if let Ok(p) = serde_json::from_value(v) {
                    *patch = p;
                }
            }
            RunEvent::Message { message, .. } => {
                *message = Arc::new(redact_message(r, message));
            }
            RunEvent::Custom { data, .. } => redact_value(r, data),
            RunEvent::AwaitingApproval { pending, .. } => {
                for p in pending {
                    redact_value(r, &mut p.input);
                    redact_string(r, &mut p.reason);
                }
            }
            RunEvent::Compacted { summary, .. } => redact_string(r, summary),
            RunEvent::ModelRequest { system, .. } => {
                if let Some(text) = system {
                    let masked = r.redact(text);
                    if let std::borrow::Cow::Owned(masked) = masked {
                        *text = masked.into();
                    }
                }
            }
            RunEvent::HookDecision { detail, .. } => redact_string(r, detail),
            RunEvent::HookFailed { error, .. } => redact_string(r, error),
            RunEvent::RunFailed { error, .. } => redact_string(r, error),
            RunEvent::RunFinished { stop, .. } => {
                // Stop reasons carry hooks' reasons, errors and pending calls' inputs.
                let mut v = serde_json::to_value(&*stop).unwrap_or(Value::Null);
                redact_value(r, &mut v);
                if let Ok(s) = serde_json::from_value(v) {
                    *stop = s;
                }
            }
            RunEvent::ApprovalResolved { decision, .. } => match decision {
                crate::Decision::Reject { reason, .. }
                | crate::Decision::RejectAndStop { reason, .. } => redact_string(r, reason),
                crate::Decision::Approve { .. } => {}
            },
            RunEvent::RunStarted { .. }
            | RunEvent::StepStarted { .. }
            | RunEvent::StepFinished { .. }
            | RunEvent::ModelProgress { .. } => {}
        }
        self
    }
}
