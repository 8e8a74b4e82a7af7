//! The Chat Completions client: OpenAI and every server that speaks its protocol.

use super::chat_stream::ChatDecoder;
use crate::Error;
use crate::http::{Endpoint, HttpConfig, shared_builder_methods};
use crate::params::{apply_extra, merged};
use crate::parts::{Place, Refusal, assistant_text, base64_of, stream_or_refuse, url_of};
use agentry_core::content::{MediaSource, Part};
use agentry_core::{Content, Message, Model, ModelParams, ModelRequest, ModelStream};
use serde_json::{Value, json};

/// A model behind the OpenAI Chat Completions API (`POST {base}/chat/completions`), streamed.
///
/// Works with OpenAI and with the servers that speak the same protocol: Azure OpenAI, vLLM,
/// llama.cpp's `llama-server`, Ollama, LM Studio, OpenRouter and others. It streams text,
/// reasoning (`reasoning_content` or `reasoning`, where the server sends it), tool calls
/// assembled from their argument pieces, usage (`stream_options.include_usage`) and the finish
/// reason; retries rate limits and server errors with backoff (see [`RetryPolicy`]).
///
/// ```no_run
/// # fn main() -> Result<(), agentry_models::Error> {
/// use agentry_models::OpenAi;
/// // OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID
/// let hosted = OpenAi::from_env("gpt-4.1")?;
/// // A local server, configured in code.
/// let local = OpenAi::builder("qwen2.5-coder")
///     .base_url("http://127.0.0.1:8080/v1")
///     .build()?;
/// # Ok(()) }
/// ```
///
/// [`RetryPolicy`]: crate::RetryPolicy
#[derive(Debug)]
pub struct OpenAi {
    model: String,
    endpoint: Endpoint,
    params: ModelParams,
    stream_usage: bool,
    max_tokens_field: &'static str,
}

/// Configures an [`OpenAi`] client.
#[derive(Debug)]
pub struct OpenAiBuilder {
    model: String,
    http: HttpConfig,
    params: ModelParams,
    stream_usage: bool,
    legacy_max_tokens: Option<bool>,
}

impl OpenAi {
    /// A client for OpenAI's API with nothing read from the environment; set the key and
    /// anything else on the builder.
    pub fn builder(model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder::new(model.into(), super::http_default())
    }

    /// A builder preset from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
    /// `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`.
    pub fn builder_from_env(model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder::new(model.into(), super::http_from_env())
    }

    /// A client configured from the environment (see [`builder_from_env`](Self::builder_from_env)).
    pub fn from_env(model: impl Into<String>) -> Result<OpenAi, Error> {
        Self::builder_from_env(model).build()
    }

    /// The request body for one turn, or the part it cannot carry.
    fn body(&self, request: &ModelRequest) -> Result<Value, Refusal> {
        let params = merged(&self.params, &request.params);
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": &**system}));
        }
        chat_messages(request.messages.iter(), &mut messages)?;
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
        });
        if self.stream_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }})
                })
                .collect();
        }
        if let Some(schema) = &request.output_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": super::named_schema(schema),
            });
        }
        if let Some(t) = params.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = params.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(n) = params.max_tokens {
            body[self.max_tokens_field] = json!(n);
        }
        if !params.stop.is_empty() {
            body["stop"] = json!(params.stop);
        }
        apply_extra(&mut body, &params);
        Ok(body)
    }
}

const PROVIDER: &str = "OpenAI Chat Completions";

/// The history in the Chat Completions shape. Tool messages take only text there, so the media
/// of tool results follow the run of tool messages they belong to in one user message, each
/// introduced by the call it came from.
fn chat_messages<'a>(
    history: impl Iterator<Item = &'a Message>,
    out: &mut Vec<Value>,
) -> Result<(), Refusal> {
    let mut attachments: Vec<Value> = Vec::new();
    for message in history {
        if !matches!(message, Message::Tool(_)) && !attachments.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut attachments)}));
        }
        match message {
            Message::Tool(result) if result.content.has_media() => {
                let place = Place::ToolResult(&result.name);
                attachments.push(json!({"type": "text", "text": format!(
                    "The result of tool call {} ({}) carries these attachments:",
                    result.call_id, result.name
                )}));
                for part in result.content.media() {
                    attachments.push(chat_part(part, place)?);
                }
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": result.content.text(),
                }));
            }
            other => out.push(chat_message(other)?),
        }
    }
    if !attachments.is_empty() {
        out.push(json!({"role": "user", "content": attachments}));
    }
    Ok(())
}

/// A user message's content: a string for text, else an array of content parts.
fn user_content(content: &Content) -> Result<Value, Refusal> {
    if let Some(text) = content.as_text() {
        return Ok(json!(text));
    }
    content
        .parts()
        .iter()
        .map(|p| chat_part(p, Place::User))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// One part in the Chat Completions content-part shape.
fn chat_part(part: &Part, place: Place<'_>) -> Result<Value, Refusal> {
    Ok(match part {
        Part::Text(text) => json!({"type": "text", "text": text}),
        Part::Image(m) => {
            json!({"type": "image_url", "image_url": {"url": url_of(PROVIDER, part, m, place)?}})
        }
        Part::Audio(m) => {
            let format = match m.media_type.as_str() {
                "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
                "audio/mpeg" | "audio/mp3" => "mp3",
                _ => {
                    return Err(Refusal::new(
                        PROVIDER,
                        part,
                        place,
                        "it takes WAV or MP3 audio only; convert the audio, or drop the part in a BeforeModel hook",
                    ));
                }
            };
            if let MediaSource::Url(_) = m.source {
                return Err(Refusal::new(
                    PROVIDER,
                    part,
                    place,
                    "it takes audio as bytes, not URLs; fetch the audio into the part",
                ));
            }
            json!({"type": "input_audio", "input_audio": {
                "data": base64_of(PROVIDER, part, m, place)?,
                "format": format,
            }})
        }
        Part::File(m) => {
            if let MediaSource::Url(_) = m.source {
                return Err(Refusal::new(
                    PROVIDER,
                    part,
                    place,
                    "it takes files as bytes, not URLs; read the file into the part, or use the Responses API (`openai-responses`), which takes file URLs",
                ));
            }
            json!({"type": "file", "file": {
                "filename": m.name.as_deref().unwrap_or("file"),
                "file_data": url_of(PROVIDER, part, m, place)?,
            }})
        }
    })
}

/// One history message in the Chat Completions shape.
fn chat_message(message: &Message) -> Result<Value, Refusal> {
    Ok(match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": user_content(content)?}),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let text = assistant_text(PROVIDER, content)?;
            let mut m = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name,
                            "arguments": c.arguments,
                        }})
                    })
                    .collect();
            }
            m
        }
        Message::Tool(result) => json!({
            "role": "tool",
            "tool_call_id": result.call_id,
            "content": result.content.text(),
        }),
    })
}

impl Model for OpenAi {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        stream_or_refuse(&self.endpoint, self.body(request), ChatDecoder::default)
    }

    /// `tiktoken` with the model's encoding, when the model is one `tiktoken` knows.
    fn token_counter(&self) -> Option<std::sync::Arc<dyn agentry_core::TokenCounter>> {
        crate::Tiktoken::for_model(&self.model)
            .map(|t| std::sync::Arc::new(t) as std::sync::Arc<dyn agentry_core::TokenCounter>)
    }
}

impl OpenAiBuilder {
    fn new(model: String, http: HttpConfig) -> Self {
        OpenAiBuilder {
            model,
            http,
            params: ModelParams::default(),
            stream_usage: true,
            legacy_max_tokens: None,
        }
    }

    shared_builder_methods!();

    /// Sends the `OpenAI-Organization` header.
    pub fn organization(self, id: &str) -> Self {
        self.header("OpenAI-Organization", id)
    }

    /// Sends the `OpenAI-Project` header.
    pub fn project(self, id: &str) -> Self {
        self.header("OpenAI-Project", id)
    }

    /// Whether to ask for usage in the stream (`stream_options.include_usage`, default on);
    /// turn it off for servers that reject the option.
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// Whether the output limit is sent as `max_tokens` (the field most compatible servers
    /// read) rather than `max_completion_tokens` (what OpenAI's reasoning models require).
    /// By default OpenAI's and Azure's hosts get `max_completion_tokens` and other servers
    /// `max_tokens`.
    pub fn legacy_max_tokens(mut self, on: bool) -> Self {
        self.legacy_max_tokens = Some(on);
        self
    }

    /// The client. Fails when OpenAI's own API is addressed without a key, or when the base
    /// URL or a header is invalid.
    pub fn build(self) -> Result<OpenAi, Error> {
        super::require_key(&self.http)?;
        let hosted = ["api.openai.com", "openai.azure.com"]
            .iter()
            .any(|host| self.http.base_url.contains(host));
        let legacy = self.legacy_max_tokens.unwrap_or(!hosted);
        let endpoint = Endpoint::new(
            format!("openai:{}", self.model),
            &self.http,
            "/chat/completions",
            super::ENV,
        )?;
        Ok(OpenAi {
            model: self.model,
            endpoint,
            params: self.params,
            stream_usage: self.stream_usage,
            max_tokens_field: if legacy {
                "max_tokens"
            } else {
                "max_completion_tokens"
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_request::weather_request;
    use agentry_core::{ToolCall, ToolResult};
    use std::sync::Arc;

    fn client() -> OpenAi {
        OpenAi::builder("m")
            .base_url("http://127.0.0.1:1/v1")
            .build()
            .unwrap()
    }

    #[test]
    fn the_body_carries_system_history_tools_and_parameters() {
        let mut request = weather_request([
            Message::user("weather?"),
            Message::Assistant {
                content: Default::default(),
                thinking: None,
                tool_calls: vec![ToolCall::new(
                    "c1",
                    "get_weather",
                    &json!({"city": "Paris"}),
                )],
            },
            Message::Tool(ToolResult::ok("c1", "get_weather", "sunny")),
        ]);
        request.params.max_tokens = Some(64);
        request.params.extra.insert("seed".into(), json!(3));
        request.output_schema = Some(Arc::new(json!({"type": "object"})));
        let body = client().body(&request).unwrap();
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["name"], "output");
        assert_eq!(
            body["response_format"]["json_schema"]["schema"]["type"],
            "object"
        );
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["seed"], 3);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn openai_itself_needs_a_key_and_gets_max_completion_tokens() {
        let err = OpenAi::builder("gpt-4.1").build().unwrap_err();
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
        let hosted = OpenAi::builder("gpt-4.1").api_key("sk-x").build().unwrap();
        assert_eq!(hosted.max_tokens_field, "max_completion_tokens");
    }
}
