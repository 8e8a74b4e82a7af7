//! A request in the Messages API shape: system blocks, alternating turns of content blocks,
//! tools, and the thinking settings.

use super::Anthropic;
use crate::params::apply_extra;
use crate::parts::{Place, Refusal, assistant_text, base64_of, data_of};
use agentry_core::content::{MediaSource, Part};
use agentry_core::{Content, Message, ModelParams, ModelRequest, ThinkingBlock, ToolCall};
use serde_json::{Value, json};

const PROVIDER: &str = "Anthropic Messages";

/// The request body for one turn, or the part it cannot carry.
pub(super) fn body(
    model: &Anthropic,
    request: &ModelRequest,
    params: &ModelParams,
) -> Result<Value, Refusal> {
    let mut system: Vec<String> = request.system.iter().map(|s| s.to_string()).collect();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter() {
        let (role, blocks) = match message {
            Message::System { content } => {
                system.push(content.clone());
                continue;
            }
            Message::User { content } => ("user", blocks(content, Place::User)?),
            Message::Assistant {
                content,
                thinking,
                tool_calls,
            } => {
                let text = assistant_text(PROVIDER, content)?;
                ("assistant", assistant_blocks(&text, thinking, tool_calls))
            }
            Message::Tool(result) => {
                let content = match result.content.as_text() {
                    Some(text) => json!(text),
                    None => json!(blocks(&result.content, Place::ToolResult(&result.name))?),
                };
                (
                    "user",
                    vec![json!({
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": content,
                        "is_error": result.is_error,
                    })],
                )
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            // The API wants turns to alternate: tool results and a following user message
            // share one user turn.
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if let Some(schema) = &request.output_schema {
        system.push(format!(
            "Give your final answer as one JSON value, with no other text, matching this JSON Schema:\n{schema}"
        ));
    }
    if model.prompt_caching
        && let Some(block) = turns.last_mut().and_then(|(_, b)| b.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut max_tokens = params.max_tokens.unwrap_or(model.max_tokens);
    let mut body = json!({
        "model": model.model,
        "messages": turns
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect::<Vec<_>>(),
        "stream": true,
    });
    if !system.is_empty() {
        let text = system.join("\n\n");
        body["system"] = if model.prompt_caching {
            json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}])
        } else {
            json!(text)
        };
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if model.prompt_caching
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body["tools"] = json!(tools);
    }
    if let Some(budget) = model.thinking_budget {
        if max_tokens <= budget {
            max_tokens += budget;
        }
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    } else {
        // Extended thinking allows neither a temperature nor top_p.
        if let Some(t) = params.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = params.top_p {
            body["top_p"] = json!(p);
        }
    }
    body["max_tokens"] = json!(max_tokens);
    if !params.stop.is_empty() {
        body["stop_sequences"] = json!(params.stop);
    }
    apply_extra(&mut body, params);
    Ok(body)
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Content as content blocks: text, image and document blocks in order (an empty text part
/// is left out: the API rejects empty text blocks).
fn blocks(content: &Content, place: Place<'_>) -> Result<Vec<Value>, Refusal> {
    let mut out = Vec::with_capacity(content.parts().len());
    for part in content.parts() {
        match part {
            Part::Text(text) if text.is_empty() => {}
            Part::Text(text) => out.push(text_block(text)),
            Part::Image(m) => {
                let source = match &m.source {
                    MediaSource::Url(url) => json!({"type": "url", "url": url}),
                    MediaSource::Bytes(_) => {
                        if !matches!(
                            m.media_type.as_str(),
                            "image/jpeg" | "image/png" | "image/gif" | "image/webp"
                        ) {
                            return Err(Refusal::new(
                                PROVIDER,
                                part,
                                place,
                                "it takes JPEG, PNG, GIF or WebP images; convert the image",
                            ));
                        }
                        json!({
                            "type": "base64",
                            "media_type": m.media_type,
                            "data": base64_of(PROVIDER, part, m, place)?,
                        })
                    }
                };
                out.push(json!({"type": "image", "source": source}));
            }
            Part::File(m) => {
                let source = match &m.source {
                    MediaSource::Url(url) => json!({"type": "url", "url": url}),
                    MediaSource::Bytes(_) if m.media_type == "application/pdf" => json!({
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": base64_of(PROVIDER, part, m, place)?,
                    }),
                    MediaSource::Bytes(_) => {
                        let data = data_of(PROVIDER, part, m, place)?;
                        match std::str::from_utf8(data) {
                            Ok(text) if m.is("text") || m.media_type == "application/json" => {
                                json!({"type": "text", "media_type": "text/plain", "data": text})
                            }
                            _ => {
                                return Err(Refusal::new(
                                    PROVIDER,
                                    part,
                                    place,
                                    "its documents are PDFs or plain text; convert the file, or turn it into text in a BeforeModel hook",
                                ));
                            }
                        }
                    }
                };
                let mut block = json!({"type": "document", "source": source});
                if let Some(name) = &m.name {
                    block["title"] = json!(name);
                }
                out.push(block);
            }
            Part::Audio(_) => {
                return Err(Refusal::new(
                    PROVIDER,
                    part,
                    place,
                    "it takes no audio; transcribe it in a BeforeModel hook, or use an OpenAI audio model",
                ));
            }
        }
    }
    Ok(out)
}

/// A model turn's blocks: its thinking as the API wrote it, its text, its tool calls.
fn assistant_blocks(
    content: &str,
    thinking: &Option<ThinkingBlock>,
    tool_calls: &[ToolCall],
) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = thinking {
        match (&thinking.replay, &thinking.signature) {
            (Some(Value::Array(items)), _) => blocks.extend(items.iter().cloned()),
            (_, Some(signature)) => blocks.push(json!({
                "type": "thinking",
                "thinking": thinking.text,
                "signature": signature,
            })),
            // Unsigned reasoning (from another provider) cannot be sent back.
            _ => {}
        }
    }
    if !content.is_empty() {
        blocks.push(text_block(content));
    }
    for call in tool_calls {
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(Value::Object(map)) => Value::Object(map),
            // The model sent arguments that are not an object; it was told so in the tool
            // result. The API only accepts an object here.
            _ => json!({"invalid_arguments": call.arguments}),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_request::weather_request;
    use agentry_core::ToolResult;

    fn model(caching: bool, thinking: Option<u32>) -> Anthropic {
        let mut b = Anthropic::builder("claude")
            .api_key("k")
            .base_url("http://127.0.0.1:1")
            .prompt_caching(caching);
        if let Some(budget) = thinking {
            b = b.thinking(budget);
        }
        b.build().unwrap()
    }

    fn request() -> ModelRequest {
        let replay = json!([
            {"type": "thinking", "thinking": "use the tool", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"}
        ]);
        let mut request = weather_request([
            Message::user("weather?"),
            Message::Assistant {
                content: Default::default(),
                thinking: Some(ThinkingBlock {
                    text: "use the tool".into(),
                    signature: Some("sig".into()),
                    replay: Some(replay),
                }),
                tool_calls: vec![
                    ToolCall::new("t1", "get_weather", &json!({"city": "Paris"})),
                    ToolCall {
                        id: "t2".into(),
                        name: "get_time".into(),
                        arguments: "{oops".into(),
                    },
                ],
            },
            Message::Tool(ToolResult::ok("t1", "get_weather", "sunny")),
            Message::Tool(ToolResult::error("t2", "get_time", "bad arguments")),
            Message::user("and tomorrow?"),
        ]);
        request.params.temperature = Some(0.5);
        request
    }

    #[test]
    fn turns_alternate_with_thinking_sent_back_verbatim() {
        let request = request();
        let body = body(&model(false, None), &request, &request.params).unwrap();
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{body:#}");
        let assistant = messages[1]["content"].as_array().unwrap();
        assert_eq!(assistant[0]["signature"], "sig");
        assert_eq!(assistant[1]["type"], "redacted_thinking");
        assert_eq!(assistant[2]["input"]["city"], "Paris");
        assert_eq!(assistant[3]["input"]["invalid_arguments"], "{oops");
        let user = messages[2]["content"].as_array().unwrap();
        assert_eq!(user[0]["tool_use_id"], "t1");
        assert_eq!(user[1]["is_error"], true);
        assert_eq!(user[2]["text"], "and tomorrow?");
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["max_tokens"], 4096);
    }

    #[test]
    fn caching_marks_system_tools_and_the_last_block_and_thinking_drops_temperature() {
        let request = request();
        let body = body(&model(true, Some(8000)), &request, &request.params).unwrap();
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
        let last = body["messages"][2]["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["cache_control"]["type"], "ephemeral");
        assert_eq!(body["thinking"]["budget_tokens"], 8000);
        assert_eq!(body["max_tokens"], 12096);
        assert!(body.get("temperature").is_none());
    }
}
