//! A conversation rendered with a local model's chat template (Jinja, from the model file), as
//! a local model's turn renders it: messages of every role (tool calls and results included),
//! tools, a system prompt and an output schema; and a template's source as the model file
//! gives it, compiled.
//!
//! Input: a byte that picks the template (ChatML, Qwen2.5's tool-calling template, or the rest
//! of the input as a template's source, compiled only), then the conversation as JSON
//! (`{"system", "messages", "tools", "output_schema"}`, the messages in the store's form), or
//! any other text, which becomes one user message.

use agentry::{History, Message, ModelRequest, ToolSpec};
use agentry_local::fuzzing::{compile_chat_template, render_chat_template};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// Qwen2.5's chat template (tools in the system turn, calls in `<tool_call>` tags, results in
/// `<tool_response>` tags).
const QWEN25: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// A conversation as the input gives it.
#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    tools: Vec<ToolSpec>,
    #[serde(default)]
    output_schema: Option<Value>,
}

/// Renders (or compiles) what `data` describes; panics if a prompt rendered with a known
/// template does not end with the generation prompt.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let template = match pick % 3 {
        0 => None,
        1 => Some(QWEN25),
        _ => {
            // A template's source is the model file's to give: compiled, never rendered
            // (a template may loop as long as it likes).
            let _ = compile_chat_template(Some(&String::from_utf8_lossy(rest)));
            return;
        }
    };
    let request = match serde_json::from_slice::<Conversation>(rest) {
        Ok(c) => {
            let mut request = ModelRequest::new(c.messages.into_iter().collect::<History>());
            request.system = c.system.map(Arc::from);
            request.tools = c.tools.into();
            request.output_schema = c.output_schema.map(Arc::new);
            request
        }
        Err(_) => {
            let mut history = History::new();
            history.push(Message::user(String::from_utf8_lossy(rest).into_owned()));
            ModelRequest::new(history)
        }
    };
    let rendered = render_chat_template(template, "", "<|im_end|>", &request);
    crate::support::debug("local_chat_template", &rendered);
    if let Ok(prompt) = rendered {
        assert!(
            prompt.ends_with("<|im_start|>assistant\n"),
            "a prompt without the generation prompt at its end: {prompt:?}"
        );
    }
}
