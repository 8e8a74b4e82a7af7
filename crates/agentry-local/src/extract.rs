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

use agentry_core::{ToolCall, ToolSpec};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ops::Range;

/// The opening tag of a Qwen-style tool call.
const OPEN_TAG: &str = "<tool_call>";
/// The closing tag of a Qwen-style tool call.
const CLOSE_TAG: &str = "</tool_call>";
/// The delimiter of a fenced block.
const FENCE: &str = "```";
/// The info strings (compared ignoring ASCII case) of a fence that may hold a call.
const FENCE_LANGS: [&str; 3] = ["", "json", "tool_call"];
/// The keys that may hold the tool name, in order of preference.
const NAME_KEYS: [&str; 3] = ["name", "tool", "function"];
/// The keys that may hold the arguments, in order of preference.
const ARGUMENT_KEYS: [&str; 4] = ["arguments", "parameters", "args", "input"];
/// Keys besides the name that a call without arguments may carry.
const EXTRA_KEYS: [&str; 2] = ["type", "id"];

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

/// The tool name and arguments an object holds, in any of the accepted shapes: `name` (or
/// `tool`, `function`) with `arguments` (or `parameters`, `args`, `input`) as an object or a
/// string of JSON, or all of it nested under `function`. Missing arguments read as `{}`,
/// unless the object has other keys (then it is more likely data than a call).
fn call_parts(object: &Map<String, Value>) -> Option<(&str, Value)> {
    if let Some(Value::Object(function)) = object.get("function") {
        return call_parts(function);
    }
    let (name_key, name) = NAME_KEYS
        .iter()
        .find_map(|key| Some((*key, object.get(*key)?.as_str()?)))?;
    let arguments = ARGUMENT_KEYS
        .iter()
        .find_map(|key| object.get(*key).filter(|value| !value.is_null()));
    let arguments = match arguments {
        Some(Value::String(json)) => serde_json::from_str(json).ok()?,
        Some(value) => value.clone(),
        None if only_call_keys(object, name_key) => Value::Object(Map::new()),
        None => return None,
    };
    Some((name, arguments))
}

/// Whether `object` has no keys besides the name key and the harmless [`EXTRA_KEYS`].
fn only_call_keys(object: &Map<String, Value>, name_key: &str) -> bool {
    object.iter().all(|(key, value)| {
        key == name_key || EXTRA_KEYS.contains(&key.as_str()) || value.is_null()
    })
}

/// Reads exactly one JSON value at the start of `text` (after any whitespace); returns it and
/// the length of `text` it spans.
fn read_value(text: &str) -> Option<(Value, usize)> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// The JSON value of a fence at `start` whose info string may mark a call, and where the
/// fence ends. The body of a closed fence must be exactly one JSON value; an unclosed fence
/// (the model stopped, or forgot it) ends after the value that opens its body.
fn fence_payload(text: &str, start: usize) -> Option<(Value, usize)> {
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
fn after_close_tag(text: &str, end: usize) -> usize {
    let close = skip_whitespace(text, end);
    if text[close..].starts_with(CLOSE_TAG) {
        close + CLOSE_TAG.len()
    } else {
        end
    }
}

/// The position just past the first `delimiter` at or after `from`, or `from` when there is
/// none.
fn past(text: &str, from: usize, delimiter: &str) -> usize {
    text[from..]
        .find(delimiter)
        .map_or(from, |at| from + at + delimiter.len())
}

/// The first position at or after `at` that is not whitespace.
fn skip_whitespace(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + (rest.len() - rest.trim_start().len())
}

/// `text` without `spans` (sorted, disjoint), trimmed; a run of three or more newlines where
/// a span was removed collapses to two.
fn remove_spans(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for span in spans {
        join(&mut out, &text[from..span.start]);
        from = span.end;
    }
    join(&mut out, &text[from..]);
    out.trim().to_string()
}

/// Appends `next` to `out` where a span was removed: when the whitespace around the seam
/// holds three or more newlines it becomes a blank line (keeping the indentation of `next`'s
/// first line).
fn join(out: &mut String, next: &str) {
    let left = out.len() - out.trim_end().len();
    let right = next.len() - next.trim_start().len();
    let newlines =
        out[out.len() - left..].matches('\n').count() + next[..right].matches('\n').count();
    if newlines < 3 {
        out.push_str(next);
        return;
    }
    out.truncate(out.len() - left);
    out.push_str("\n\n");
    let indent = next[..right].rfind('\n').map_or(0, |last| last + 1);
    out.push_str(&next[indent..]);
}

/// Whether what is left around accepted calls is only their wrapping: brackets, braces, and
/// tags with nothing inside (`<tools></tools>`, `<response>`), as small models write them.
fn is_residue(text: &str) -> bool {
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || "{}[]".contains(c));
        if rest.is_empty() {
            return true;
        }
        let tag = rest.strip_prefix('<').and_then(|r| r.split_once('>'));
        match tag {
            Some((name, after)) if is_tag_name(name) => rest = after,
            _ => return false,
        }
    }
}

/// Whether `name` is the inside of an XML-like tag: `tools`, `/response`, `tool_call`.
fn is_tag_name(name: &str) -> bool {
    let name = name.strip_prefix('/').unwrap_or(name);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The tools of the tests: `get_weather` (a required `city`) and `get_time` (an optional
    /// `zone`).
    fn extractor() -> ToolCallExtractor {
        ToolCallExtractor::new(&[
            ToolSpec {
                name: "get_weather".into(),
                description: "The weather in a city.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }),
            },
            ToolSpec {
                name: "get_time".into(),
                description: "The time in a zone.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"zone": {"type": "string"}}
                }),
            },
        ])
    }

    /// Extracts from `text` with the test tools and the `call_` prefix.
    fn extract(text: &str) -> Extracted {
        extractor().extract(text, "call_")
    }

    /// Asserts that `text` has no call and comes back unchanged.
    fn assert_stays_text(text: &str) {
        let extracted = extract(text);
        assert!(extracted.calls.is_empty(), "{:?}", extracted.calls);
        assert_eq!(extracted.text, text);
    }

    /// The `get_weather` call for `city` with id `id`.
    fn weather(id: &str, city: &str) -> ToolCall {
        ToolCall::new(id, "get_weather", &json!({"city": city}))
    }

    #[test]
    fn fenced_json_call_after_a_sentence() {
        let text = "Let me look that up for you.\n\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n```";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "Let me look that up for you.");
    }

    #[test]
    fn other_fence_info_strings_hold_calls_too() {
        for info in ["JSON", "tool_call", ""] {
            let text = format!(
                "```{info}\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Oslo\"}}}}\n```"
            );
            let extracted = extract(&text);
            assert_eq!(extracted.calls, vec![weather("call_0", "Oslo")], "{info}");
            assert_eq!(extracted.text, "");
        }
    }

    #[test]
    fn fenced_array_of_calls() {
        let text = "```json\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": \"get_time\", \"arguments\": {}}]\n```";
        let extracted = extract(text);
        assert_eq!(
            extracted.calls,
            vec![
                weather("call_0", "Rome"),
                ToolCall::new("call_1", "get_time", &json!({}))
            ]
        );
        assert_eq!(extracted.text, "");
    }

    #[test]
    fn bare_json_call() {
        let extracted = extract(r#"{"name": "get_weather", "arguments": {"city": "Lisbon"}}"#);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "");
    }

    #[test]
    fn bare_call_in_prose_keeps_the_text_after_it() {
        let text = "Sure. {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}. I will report back.";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "Sure. . I will report back.");
    }

    #[test]
    fn qwen_tool_call_tags() {
        let text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n</tool_call>";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "");
    }

    #[test]
    fn unclosed_tag_at_the_end_is_tolerated() {
        let text = "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n";
        let extracted = extract(text);
        assert_eq!(
            extracted.calls,
            vec![ToolCall::new("call_0", "get_time", &json!({"zone": "UTC"}))]
        );
        assert_eq!(extracted.text, "Checking.");
    }

    #[test]
    fn two_calls_in_one_output() {
        let text = "I'll check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n</tool_call>\n\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Porto\"}}\n</tool_call>\n\n\nDone.";
        let extracted = extract(text);
        assert_eq!(
            extracted.calls,
            vec![weather("call_0", "Lisbon"), weather("call_1", "Porto")]
        );
        assert_eq!(extracted.text, "I'll check both.\n\nDone.");
    }

    #[test]
    fn calls_in_different_shapes_are_numbered_in_order() {
        let text = "```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```\nand {\"tool\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}";
        let extracted = extractor().extract(text, "x");
        assert_eq!(
            extracted.calls,
            vec![
                ToolCall::new("x0", "get_time", &json!({})),
                weather("x1", "Paris")
            ]
        );
        assert_eq!(extracted.text, "and");
    }

    #[test]
    fn invented_tool_name_stays_text() {
        assert_stays_text(
            "```json\n{\"name\": \"book_flight\", \"arguments\": {\"to\": \"Lisbon\"}}\n```",
        );
        assert_stays_text(
            "<tool_call>\n{\"name\": \"book_flight\", \"arguments\": {}}\n</tool_call>",
        );
        assert_stays_text("{\"name\": \"book_flight\", \"arguments\": {\"to\": \"Lisbon\"}}");
    }

    #[test]
    fn broken_json_stays_text() {
        assert_stays_text("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}");
        assert_stays_text(
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": Lisbon}}\n```",
        );
        assert_stays_text(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"\n</tool_call>",
        );
    }

    #[test]
    fn arguments_failing_the_schema_stay_text() {
        assert_stays_text("{\"name\": \"get_weather\", \"arguments\": {\"city\": 42}}");
        assert_stays_text("{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Lisbon\"}}");
        assert_stays_text("{\"name\": \"get_weather\"}");
        assert_stays_text("{\"name\": \"get_weather\", \"arguments\": [\"Lisbon\"]}");
    }

    #[test]
    fn one_invalid_call_keeps_the_whole_array_as_text() {
        assert_stays_text(
            "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": \"get_weather\", \"arguments\": {}}]",
        );
    }

    #[test]
    fn arguments_as_a_json_string() {
        let extracted =
            extract(r#"{"name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}"#);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_stays_text(r#"{"name": "get_weather", "arguments": "city=Lisbon"}"#);
    }

    #[test]
    fn other_key_names_and_nesting() {
        for text in [
            r#"{"tool": "get_weather", "parameters": {"city": "Lisbon"}}"#,
            r#"{"function": "get_weather", "input": {"city": "Lisbon"}}"#,
            r#"{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lisbon"}}}"#,
            r#"{"function": {"name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}}"#,
        ] {
            assert_eq!(
                extract(text).calls,
                vec![weather("call_0", "Lisbon")],
                "{text}"
            );
        }
    }

    #[test]
    fn missing_arguments_read_as_empty_when_the_schema_accepts_it() {
        let extracted = extract("{\"name\": \"get_time\"}");
        assert_eq!(
            extracted.calls,
            vec![ToolCall::new("call_0", "get_time", &json!({}))]
        );
        assert_stays_text("{\"name\": \"get_time\", \"zone\": \"UTC\"}");
    }

    #[test]
    fn data_objects_stay_text() {
        assert_stays_text("The reading was {\"temperature\": 21} at noon.");
        assert_stays_text("```json\n{\"temperature\": 21}\n```");
        assert_stays_text("[1, 2, 3] and [{\"a\": 1}]");
    }

    #[test]
    fn closed_fence_with_text_besides_the_json_stays_text() {
        assert_stays_text(
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\nThen I answer.\n```",
        );
    }

    #[test]
    fn unclosed_fence_ends_after_its_json() {
        let text = "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n\nI'll wait.";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "I'll wait.");
    }

    #[test]
    fn other_code_fences_stay_text() {
        assert_stays_text(
            "```python\nprint({\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}})\n```",
        );
    }

    #[test]
    fn a_tool_whose_schema_does_not_compile_accepts_any_object() {
        let extractor = ToolCallExtractor::new(&[ToolSpec {
            name: "odd".into(),
            description: String::new(),
            parameters: json!({"type": 12}),
        }]);
        let extracted = extractor.extract(r#"{"name": "odd", "arguments": {"x": 1}}"#, "c");
        assert_eq!(
            extracted.calls,
            vec![ToolCall::new("c0", "odd", &json!({"x": 1}))]
        );
        let extracted = extractor.extract(r#"{"name": "odd", "arguments": 3}"#, "c");
        assert!(extracted.calls.is_empty());
    }

    #[test]
    fn no_tools_means_no_calls() {
        let text = r#"{"name": "get_weather", "arguments": {"city": "Lisbon"}}"#;
        let extracted = ToolCallExtractor::new(&[]).extract(text, "c");
        assert!(extracted.calls.is_empty());
        assert_eq!(extracted.text, text);
    }

    #[test]
    fn text_without_calls_is_unchanged_not_trimmed() {
        assert_stays_text("  Hello there.\n\n\n\nBye.  \n");
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        let nasty = [
            "",
            "{",
            "}",
            "[",
            "{{{{{{",
            "[[[[[[[[[[",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}}}}]]]",
            "```",
            "``",
            "`",
            "```json",
            "```json\n",
            "```json\n{",
            "```\n```",
            "<tool_call>",
            "<tool_call",
            "</tool_call>",
            "<tool_call></tool_call>",
            "<tool_call>```",
            "<tool_call>```json\n{\"name\": \"get_time\"}",
            "héllo {ünïcödé} 日本語 [✓] `",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbôa 🌧\"}}é",
            "```é\n{}\n```",
            "<tool_call>é",
            "\u{0}{\u{0}",
        ];
        for text in nasty {
            let _ = extract(text);
        }
        let deep = "[".repeat(10_000);
        assert!(extract(&deep).calls.is_empty());
    }

    #[test]
    fn non_ascii_around_a_call() {
        let text = "Vou verificar — já!\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbôa 🌧\"}}\n```\nObrigado ✓";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbôa 🌧")]);
        assert_eq!(extracted.text, "Vou verificar — já!\n\nObrigado ✓");
    }

    #[test]
    fn fence_inside_tags() {
        let text = "<tool_call>\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n```\n</tool_call>";
        let extracted = extract(text);
        assert_eq!(extracted.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(extracted.text, "");
    }

    #[test]
    fn wrapping_left_around_a_call_is_dropped() {
        // Recorded from Qwen2.5-Coder-1.5B on the quick start's weather question.
        let out = extract(
            "<tools>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n</tools>",
        );
        assert_eq!(out.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(out.text, "");
        // The template's escaped braces, copied by the model.
        let out = extract("{{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}}}");
        assert_eq!(out.calls, vec![weather("call_0", "Lisbon")]);
        assert_eq!(out.text, "");
        // Real words around a call are kept.
        let out = extract(
            "<note>Checking.</note> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}",
        );
        assert_eq!(out.text, "<note>Checking.</note>");
    }
}
