//! The model's own chat template (Jinja, from the GGUF metadata) rendered with `minijinja`: the
//! conversation, the tools and the generation prompt, as the model was trained to see them.

use crate::Error;
use agentry_core::{Message, ModelRequest, ToolSpec};
use minijinja::{Environment, ErrorKind, Value, context};
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::path::Path;

/// The template used when a file has none: ChatML, which most small chat models speak.
const CHATML: &str = "{% for message in messages %}<|im_start|>{{ message.role }}\n\
{{ message.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// How a model that knows no tool format is told about the tools.
const TOOL_INSTRUCTIONS: &str = "You can call tools. To call one, answer with only a JSON object \
{\"name\": <tool name>, \"arguments\": <arguments object>} inside <tool_call></tool_call> tags. \
The tools:";

/// A compiled chat template.
pub(crate) struct ChatTemplate {
    env: Environment<'static>,
    /// Whether the template renders `tools` itself (else they go into the system prompt).
    knows_tools: bool,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source` (or ChatML when the file has no template).
    pub(crate) fn new(
        path: &Path,
        source: Option<&str>,
        bos_token: String,
        eos_token: String,
    ) -> Result<ChatTemplate, Error> {
        let source = source.unwrap_or(CHATML);
        let mut env = Environment::new();
        // As transformers renders chat templates.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Value, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_owned())
            .map_err(|e| Error::Template {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(ChatTemplate {
            env,
            knows_tools: source.contains("tools"),
            bos_token,
            eos_token,
        })
    }

    /// The prompt for `request`: its conversation and tools, ending with the generation prompt.
    pub(crate) fn render(&self, request: &ModelRequest) -> Result<String, String> {
        let messages = self.messages(request)?;
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| Value::from_serialize(ToolJson::new(t)))
            .collect();
        let template = self.env.get_template("chat").map_err(|e| e.to_string())?;
        let tools = (self.knows_tools && !tools.is_empty()).then_some(tools);
        template
            .render(context! {
                messages => messages,
                tools => tools,
                add_generation_prompt => true,
                bos_token => self.bos_token,
                eos_token => self.eos_token,
            })
            .map_err(|e| {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    text.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                format!("the model's chat template failed on this conversation: {text}")
            })
    }

    /// The conversation as the template's `messages`, or why it cannot be one.
    fn messages(&self, request: &ModelRequest) -> Result<Vec<Json>, String> {
        let mut system = request.system.as_deref().unwrap_or_default().to_owned();
        if !self.knows_tools && !request.tools.is_empty() {
            append(&mut system, TOOL_INSTRUCTIONS);
            for tool in request.tools.iter() {
                system.push('\n');
                let line = python_json(&ToolJson::new(tool)).unwrap_or_default();
                system.push_str(&line);
            }
        }
        if let Some(schema) = &request.output_schema {
            append(
                &mut system,
                &format!(
                    "Give your final answer as only a JSON value matching this JSON Schema: {schema}"
                ),
            );
        }
        let mut out = Vec::with_capacity(request.messages.len() + 1);
        if !system.is_empty() {
            out.push(json!({"role": "system", "content": system}));
        }
        for message in request.messages.iter() {
            out.push(self.message(message)?);
        }
        Ok(out)
    }

    /// One message in the shape chat templates expect; a message with an image, a file or
    /// audio is refused (the local models read text only).
    fn message(&self, message: &Message) -> Result<Json, String> {
        if let Some(part) = message.content().and_then(|c| c.media().next()) {
            return Err(format!(
                "the local models read text only, and a {} message carries the {} part {}: turn it \
                 into text in a BeforeModel hook (a caption or a transcript from another model), or \
                 use a provider that takes it (`openai:`, `anthropic:`)",
                match message.role() {
                    agentry_core::Role::Tool => "tool-result",
                    agentry_core::Role::Assistant => "assistant",
                    _ => "user",
                },
                part.kind(),
                part.describe(),
            ));
        }
        let text = message.text();
        Ok(match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { .. } => json!({"role": "user", "content": text}),
            Message::Assistant { tool_calls, .. } => {
                let calls: Vec<Json> = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments: Json = serde_json::from_str(&c.arguments)
                            .unwrap_or(Json::String(c.arguments.clone()));
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                if self.knows_tools || calls.is_empty() {
                    let mut m = json!({"role": "assistant", "content": text});
                    if !calls.is_empty() {
                        m["tool_calls"] = Json::Array(calls);
                    }
                    m
                } else {
                    let mut text = text.into_owned();
                    for call in &calls {
                        let call = &call["function"];
                        let call = CallJson {
                            name: &call["name"],
                            arguments: &call["arguments"],
                        };
                        let call = python_json(&call).unwrap_or_default();
                        append(&mut text, &format!("<tool_call>\n{call}\n</tool_call>"));
                    }
                    json!({"role": "assistant", "content": text})
                }
            }
            Message::Tool(result) => {
                let content = if result.is_error {
                    format!("Error: {text}")
                } else {
                    text.into_owned()
                };
                json!({"role": "tool", "name": result.name, "tool_call_id": result.call_id, "content": content})
            }
        })
    }
}

/// A tool as chat templates list it: the OpenAI function shape, keys in the order models saw
/// in training (`type`, `function`; `name`, `description`, `parameters`).
#[derive(Serialize)]
struct ToolJson<'a> {
    r#type: &'static str,
    function: FunctionJson<'a>,
}

#[derive(Serialize)]
struct FunctionJson<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Ordered<'a>,
}

impl<'a> ToolJson<'a> {
    fn new(tool: &'a ToolSpec) -> Self {
        ToolJson {
            r#type: "function",
            function: FunctionJson {
                name: &tool.name,
                description: &tool.description,
                parameters: Ordered(&tool.parameters),
            },
        }
    }
}

/// A JSON Schema written with `type`, `description`, `properties` and `required` first, as
/// schemas usually read, the other keys after them in their own order.
struct Ordered<'a>(&'a Json);

/// The keys an [`Ordered`] schema writes first.
const SCHEMA_KEYS_FIRST: [&str; 4] = ["type", "description", "properties", "required"];

impl Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Json::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                let first = SCHEMA_KEYS_FIRST
                    .iter()
                    .filter_map(|k| map.get_key_value(*k));
                let rest = map
                    .iter()
                    .filter(|(k, _)| !SCHEMA_KEYS_FIRST.contains(&k.as_str()));
                for (k, v) in first.chain(rest) {
                    out.serialize_entry(k, &Ordered(v))?;
                }
                out.end()
            }
            Json::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Ordered(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Appends a paragraph.
fn append(text: &mut String, paragraph: &str) {
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(paragraph);
}

/// `tojson` as Python's `json.dumps` writes it (the format the templates were written for):
/// `", "` and `": "` separators, non-ASCII kept, and `indent` when given.
fn tojson(value: Value, kwargs: minijinja::value::Kwargs) -> Result<Value, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let invalid =
        |e: serde_json::Error| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string());
    let text = match indent {
        Some(n) => {
            let pad = vec![b' '; n];
            let formatter = serde_json::ser::PrettyFormatter::with_indent(&pad);
            let mut out = Vec::new();
            let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
            value.serialize(&mut ser).map_err(invalid)?;
            String::from_utf8(out).unwrap_or_default()
        }
        None => python_json(&value).map_err(invalid)?,
    };
    Ok(Value::from_safe_string(text))
}

/// JSON as Python's `json.dumps` writes it by default.
fn python_json(value: &impl Serialize) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// A tool call as the tool instructions ask for it: `name` first.
#[derive(Serialize)]
struct CallJson<'a> {
    name: &'a Json,
    arguments: &'a Json,
}

/// Python's default JSON separators.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}
