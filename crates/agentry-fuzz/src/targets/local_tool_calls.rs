//! The tool calls a local model writes as text (Qwen-style `<tool_call>` tags, fenced blocks,
//! bare JSON objects and arrays), read by the local model's extractor against the tools of the
//! request.
//!
//! Input: the model's text (UTF-8, lossily).

use agentry::{ToolCall, ToolSpec};
use agentry_local::fuzzing::extract_tool_calls;
use serde_json::{Value, json};
use std::sync::OnceLock;

fn tools() -> &'static [ToolSpec] {
    static TOOLS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let spec = |name: &str, parameters: Value| ToolSpec {
            name: name.into(),
            description: format!("The {name} tool"),
            parameters,
        };
        vec![
            spec(
                "get_weather",
                json!({
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                    },
                    "required": ["city"]
                }),
            ),
            spec(
                "Bash",
                json!({
                    "type": "object",
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "integer", "minimum": 0}},
                    "required": ["command"],
                    "additionalProperties": false
                }),
            ),
            spec("now", json!({"type": "object", "properties": {}})),
            // A schema that does not compile: any object is accepted.
            spec("loose", json!({"type": 12})),
        ]
    })
}

/// Extracts the calls in `data`; panics if a call names an undeclared tool, has arguments that
/// are not an object its tool's schema accepts, or if text without calls comes back changed.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (shown, calls) = extract_tool_calls(tools(), &text, "call_");
    crate::support::debug("local_tool_calls", &(&shown, &calls));
    if calls.is_empty() {
        assert_eq!(shown, text, "text without calls comes back as written");
        return;
    }
    assert!(
        shown.len() <= text.len(),
        "text grew: {shown:?} from {text:?}"
    );
    for (n, call) in calls.iter().enumerate() {
        check(n, call);
    }
}

fn check(n: usize, call: &ToolCall) {
    assert_eq!(call.id, format!("call_{n}"));
    let spec = tools()
        .iter()
        .find(|t| t.name == call.name)
        .unwrap_or_else(|| panic!("a call of an undeclared tool: {call:?}"));
    let arguments: Value = serde_json::from_str(&call.arguments)
        .unwrap_or_else(|e| panic!("arguments that are not JSON ({e}): {call:?}"));
    assert!(
        arguments.is_object(),
        "arguments that are not an object: {call:?}"
    );
    if let Ok(validator) = jsonschema::validator_for(&spec.parameters) {
        assert!(
            validator.is_valid(&arguments),
            "arguments the schema rejects: {call:?}"
        );
    }
}
