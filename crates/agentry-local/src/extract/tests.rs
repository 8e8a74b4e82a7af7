//! The extractor on the shapes small models write calls in, and on what must stay text.

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
    let text =
        "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n";
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
    assert_stays_text("<tool_call>\n{\"name\": \"book_flight\", \"arguments\": {}}\n</tool_call>");
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
    let extracted = extract(r#"{"name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}"#);
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
    let text =
        "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n\nI'll wait.";
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
