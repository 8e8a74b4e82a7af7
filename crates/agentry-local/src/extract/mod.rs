//! Turning what a small local model wrote into visible text and tool calls.
//!
//! Small models write tool calls as plain text, in several shapes:
//!
//! - Qwen-style tags: `<tool_call>{"name": .., "arguments": {..}}</tool_call>` (a missing
//!   closing tag is tolerated);
//! - a fenced block (```` ```json ````, ```` ```tool_call ```` or a plain fence) holding a JSON
//!   object or an array of objects;
//! - a bare JSON object or array of objects anywhere in the prose.
//!
//! A candidate becomes a [`ToolCall`] only when it names a declared tool and its arguments
//! validate against that tool's schema; anything else (an invented tool, broken JSON, arguments
//! the schema rejects, an object that is just data) stays in the text exactly as written.
//! Wrapping left around accepted calls and nothing else (brackets, braces, empty tags such as
//! `<tools></tools>`, as small models write them) is dropped with them.

mod call_object;
mod delimiters;
mod leftover;
#[cfg(test)]
mod tests;

use agentry_core::{ToolCall, ToolSpec};
use call_object::call_parts;
use delimiters::{
    CLOSE_TAG, FENCE, OPEN_TAG, after_close_tag, fence_payload, past, read_value, skip_whitespace,
};
use leftover::{is_residue, remove_spans};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ops::Range;

/// What a model's output splits into: the text to show and the tool calls it made.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Extracted {
    /// The output without the accepted calls (trimmed), or the output unchanged when there
    /// are none.
    pub text: String,
    /// The accepted calls, in the order they were written.
    pub calls: Vec<ToolCall>,
}

/// Finds the tool calls in a model's output, checked against the tools of one request.
#[derive(Debug)]
pub(crate) struct ToolCallExtractor {
    /// Each declared tool by name, with its argument validator (`None` when its schema does
    /// not compile: then any object is accepted).
    tools: HashMap<String, Option<jsonschema::Validator>>,
}

/// A tool call accepted from the text: a declared tool and arguments its schema accepts.
type Call = (String, Value);

/// A construct found at some position of the text.
struct Found {
    /// Where the construct ends (exclusive, in bytes).
    end: usize,
    /// Its calls, when it is entirely made of valid calls.
    calls: Option<Vec<Call>>,
}

impl ToolCallExtractor {
    /// An extractor for the tools of one request; each tool's schema is compiled once.
    pub(crate) fn new(tools: &[ToolSpec]) -> Self {
        let mut compiled = HashMap::with_capacity(tools.len());
        for spec in tools {
            compiled
                .entry(spec.name.clone())
                .or_insert_with(|| jsonschema::validator_for(&spec.parameters).ok());
        }
        ToolCallExtractor { tools: compiled }
    }

    /// Splits `text` into visible text and tool calls; call ids are `id_prefix` followed by
    /// the call's index (from 0).
    pub(crate) fn extract(&self, text: &str, id_prefix: &str) -> Extracted {
        let (spans, calls) = self.scan(text);
        if calls.is_empty() {
            return Extracted {
                text: text.to_string(),
                calls: Vec::new(),
            };
        }
        let calls = calls
            .into_iter()
            .enumerate()
            .map(|(n, (name, args))| ToolCall::new(format!("{id_prefix}{n}"), name, &args))
            .collect();
        let mut text = remove_spans(text, &spans);
        if is_residue(&text) {
            text.clear();
        }
        Extracted { text, calls }
    }

    /// The spans of the accepted constructs in `text`, and their calls in order.
    fn scan(&self, text: &str) -> (Vec<Range<usize>>, Vec<Call>) {
        let mut spans = Vec::new();
        let mut calls = Vec::new();
        let mut at = 0;
        while let Some(offset) = text[at..].find(['{', '[', '`', '<']) {
            let start = at + offset;
            match self.found_at(text, start) {
                Some(Found {
                    end,
                    calls: Some(found),
                }) => {
                    spans.push(start..end);
                    calls.extend(found);
                    at = end;
                }
                Some(Found { end, calls: None }) => at = end,
                // Every marker is one ASCII byte, so the next byte starts a character.
                None => at = start + 1,
            }
        }
        (spans, calls)
    }

    /// The construct starting at `start` (a tag, a fence or a bare JSON value), if any.
    fn found_at(&self, text: &str, start: usize) -> Option<Found> {
        let rest = &text[start..];
        if rest.starts_with(OPEN_TAG) {
            Some(self.tag_at(text, start))
        } else if rest.starts_with(FENCE) {
            Some(self.fence_at(text, start))
        } else if rest.starts_with(['{', '[']) {
            let (value, len) = read_value(rest)?;
            Some(Found {
                end: start + len,
                calls: self.calls_in(&value),
            })
        } else {
            None
        }
    }

    /// A `<tool_call>` tag at `start`: one JSON value (or a fence holding one) after the
    /// opening tag, then the closing tag if it follows. A tag whose content is not made of
    /// valid calls stays text up to its closing tag.
    fn tag_at(&self, text: &str, start: usize) -> Found {
        let body = start + OPEN_TAG.len();
        let content = skip_whitespace(text, body);
        let payload = if text[content..].starts_with(FENCE) {
            fence_payload(text, content)
        } else {
            read_value(&text[content..]).map(|(value, len)| (value, content + len))
        };
        let calls = payload.and_then(|(value, end)| Some((self.calls_in(&value)?, end)));
        match calls {
            Some((calls, end)) => Found {
                end: after_close_tag(text, end),
                calls: Some(calls),
            },
            None => Found {
                end: past(text, body, CLOSE_TAG),
                calls: None,
            },
        }
    }

    /// A fenced block at `start`. A closed fence that is not made of valid calls (another
    /// language, data, invalid calls, extra text) stays text as a whole; an unclosed one
    /// that does not open with a JSON value is skipped past its backticks.
    fn fence_at(&self, text: &str, start: usize) -> Found {
        match fence_payload(text, start) {
            Some((value, end)) => Found {
                end,
                calls: self.calls_in(&value),
            },
            None => Found {
                end: past(text, start + FENCE.len(), FENCE),
                calls: None,
            },
        }
    }

    /// The calls a JSON payload is made of: one call object, or a non-empty array of call
    /// objects. `None` unless every element is a valid call.
    fn calls_in(&self, payload: &Value) -> Option<Vec<Call>> {
        match payload {
            Value::Object(object) => self.call_in(object).map(|call| vec![call]),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .map(|item| item.as_object().and_then(|object| self.call_in(object)))
                .collect(),
            _ => None,
        }
    }

    /// The call an object describes, if it names a declared tool with valid arguments.
    fn call_in(&self, object: &Map<String, Value>) -> Option<Call> {
        let (name, arguments) = call_parts(object)?;
        let validator = self.tools.get(name)?;
        let valid = validator
            .as_ref()
            .is_none_or(|validator| validator.is_valid(&arguments));
        (arguments.is_object() && valid).then(|| (name.to_string(), arguments))
    }
}
