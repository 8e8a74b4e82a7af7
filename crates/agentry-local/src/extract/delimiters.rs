//! Where the constructs that may hold a call begin and end in the text: `<tool_call>` tags,
//! fenced blocks and JSON values.

use serde_json::Value;

/// The opening tag of a Qwen-style tool call.
pub(super) const OPEN_TAG: &str = "<tool_call>";
/// The closing tag of a Qwen-style tool call.
pub(super) const CLOSE_TAG: &str = "</tool_call>";
/// The delimiter of a fenced block.
pub(super) const FENCE: &str = "```";
/// The info strings (compared ignoring ASCII case) of a fence that may hold a call.
const FENCE_LANGS: [&str; 3] = ["", "json", "tool_call"];

/// Reads exactly one JSON value at the start of `text` (after any whitespace); returns it and
/// the length of `text` it spans.
pub(super) fn read_value(text: &str) -> Option<(Value, usize)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// The JSON value of a fence at `start` whose info string may mark a call, and where the
/// fence ends. The body of a closed fence must be exactly one JSON value; an unclosed fence
/// (the model stopped, or forgot it) ends after the value that opens its body.
pub(super) fn fence_payload(text: &str, start: usize) -> Option<(Value, usize)> {
    let info_start = start + FENCE.len();
    let info_len = text[info_start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(text.len() - info_start);
    let info = &text[info_start..info_start + info_len];
    if !FENCE_LANGS
        .iter()
        .any(|lang| lang.eq_ignore_ascii_case(info))
    {
        return None;
    }
    let body = info_start + info_len;
    match text[body..].find(FENCE) {
        Some(close) => {
            let body_end = body + close;
            let (value, len) = read_value(&text[body..body_end])?;
            text[body + len..body_end]
                .trim()
                .is_empty()
                .then_some((value, body_end + FENCE.len()))
        }
        None => read_value(&text[body..]).map(|(value, len)| (value, body + len)),
    }
}

/// `end` moved past a closing tag that follows it (after whitespace), if there is one.
pub(super) fn after_close_tag(text: &str, end: usize) -> usize {
    let close = skip_whitespace(text, end);
    if text[close..].starts_with(CLOSE_TAG) {
        close + CLOSE_TAG.len()
    } else {
        end
    }
}

/// The position just past the first `delimiter` at or after `from`, or `from` when there is
/// none.
pub(super) fn past(text: &str, from: usize, delimiter: &str) -> usize {
    text[from..]
        .find(delimiter)
        .map_or(from, |at| from + at + delimiter.len())
}

/// The first position at or after `at` that is not whitespace.
pub(super) fn skip_whitespace(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + (rest.len() - rest.trim_start().len())
}
