//! The Responses API client (`POST {base}/responses`).

use super::responses_stream::ResponsesDecoder;
use crate::Error;
use crate::http::{Endpoint, HttpConfig, shared_builder_methods};
use crate::params::{apply_extra, merged};
use crate::parts::{Place, Refusal, assistant_text, stream_or_refuse, url_of};
use agentry_core::content::{MediaSource, Part};
use agentry_core::{Content, Message, Model, ModelParams, ModelRequest, ModelStream};
use serde_json::{Value, json};

/// A model behind OpenAI's Responses API, streamed.
///
/// Streams output items: text (`response.output_text.delta`), reasoning summaries and text,
/// function calls assembled from `response.function_call_arguments.delta`, usage and the final
/// status. Runs are stateless by default (`store: false`, the whole conversation is sent each
/// turn); with [`encrypted_reasoning`](OpenAiResponsesBuilder::encrypted_reasoning) the
/// reasoning items come back encrypted and are sent back in later turns, as OpenAI requires for
/// reasoning models to keep their chain of thought across tool calls.
///
/// ```no_run
/// # fn main() -> Result<(), agentry_models::Error> {
/// use agentry_models::OpenAiResponses;
/// let model = OpenAiResponses::builder_from_env("o4-mini")
///     .encrypted_reasoning(true)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OpenAiResponses {
    model: String,
    endpoint: Endpoint,
    params: ModelParams,
    store: bool,
    encrypted_reasoning: bool,
}

/// Configures an [`OpenAiResponses`] client.
#[derive(Debug)]
pub struct OpenAiResponsesBuilder {
    model: String,
    http: HttpConfig,
    params: ModelParams,
    store: bool,
    encrypted_reasoning: bool,
}

impl OpenAiResponses {
    /// A client for OpenAI's API with nothing read from the environment.
    pub fn builder(model: impl Into<String>) -> OpenAiResponsesBuilder {
        OpenAiResponsesBuilder::new(model.into(), super::http_default())
    }

    /// A builder preset from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
    /// `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`.
    pub fn builder_from_env(model: impl Into<String>) -> OpenAiResponsesBuilder {
        OpenAiResponsesBuilder::new(model.into(), super::http_from_env())
    }

    /// A client configured from the environment.
    pub fn from_env(model: impl Into<String>) -> Result<OpenAiResponses, Error> {
        Self::builder_from_env(model).build()
    }

    /// The request body for one turn, or the part it cannot carry.
    fn body(&self, request: &ModelRequest) -> Result<Value, Refusal> {
        let params = merged(&self.params, &request.params);
        let mut input = Vec::with_capacity(request.messages.len());
        for message in request.messages.iter() {
            input_items(message, &mut input)?;
        }
        let mut body = json!({
            "model": self.model,
            "input": input,
            "stream": true,
            "store": self.store,
        });
        if let Some(system) = &request.system {
            body["instructions"] = json!(&**system);
        }
        if self.encrypted_reasoning {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                        "strict": false,
                    })
                })
                .collect();
        }
        if let Some(schema) = &request.output_schema {
            let mut format = super::named_schema(schema);
            format.insert("type".into(), "json_schema".into());
            body["text"] = json!({ "format": format });
        }
        if let Some(t) = params.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = params.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(n) = params.max_tokens {
            body["max_output_tokens"] = json!(n);
        }
        if !params.stop.is_empty() {
            tracing::debug!(model = %self.endpoint.name, "the Responses API has no stop sequences; `stop` is not sent");
        }
        apply_extra(&mut body, &params);
        Ok(body)
    }
}

const PROVIDER: &str = "the OpenAI Responses API";

/// Content as Responses input: a string for text, else an array of input parts.
fn input_content(content: &Content, place: Place<'_>) -> Result<Value, Refusal> {
    if let Some(text) = content.as_text() {
        return Ok(json!(text));
    }
    content
        .parts()
        .iter()
        .map(|p| input_part(p, place))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// One part in the Responses input-content shape.
fn input_part(part: &Part, place: Place<'_>) -> Result<Value, Refusal> {
    Ok(match part {
        Part::Text(text) => json!({"type": "input_text", "text": text}),
        Part::Image(m) => json!({
            "type": "input_image",
            "image_url": url_of(PROVIDER, part, m, place)?,
            "detail": "auto",
        }),
        Part::File(m) => {
            let mut file = json!({"type": "input_file"});
            match &m.source {
                MediaSource::Url(url) => file["file_url"] = json!(url),
                MediaSource::Bytes(_) => {
                    file["filename"] = json!(m.name.as_deref().unwrap_or("file"));
                    file["file_data"] = json!(url_of(PROVIDER, part, m, place)?);
                }
            }
            file
        }
        Part::Audio(_) => {
            return Err(Refusal::new(
                PROVIDER,
                part,
                place,
                "it takes no audio input; use Chat Completions (`openai`) with an audio model, or turn the audio into text in a BeforeModel hook",
            ));
        }
    })
}

/// One history message as Responses input items.
fn input_items(message: &Message, input: &mut Vec<Value>) -> Result<(), Refusal> {
    match message {
        Message::System { content } => input.push(json!({"role": "system", "content": content})),
        Message::User { content } => {
            input.push(json!({"role": "user", "content": input_content(content, Place::User)?}))
        }
        Message::Assistant {
            content,
            thinking,
            tool_calls,
        } => {
            // Reasoning items go back only as the provider wrote them (with their encrypted
            // content); a summary alone cannot be sent back.
            if let Some(Value::Array(items)) = thinking.as_ref().and_then(|t| t.replay.as_ref()) {
                input.extend(items.iter().cloned());
            }
            let text = assistant_text(PROVIDER, content)?;
            if !text.is_empty() {
                input.push(json!({"role": "assistant", "content": text}));
            }
            for call in tool_calls {
                input.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
        }
        Message::Tool(result) => input.push(json!({
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": input_content(&result.content, Place::ToolResult(&result.name))?,
        })),
    }
    Ok(())
}

impl Model for OpenAiResponses {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        stream_or_refuse(
            &self.endpoint,
            self.body(request),
            ResponsesDecoder::default,
        )
    }

    /// `tiktoken` with the model's encoding, when the model is one `tiktoken` knows.
    fn token_counter(&self) -> Option<std::sync::Arc<dyn agentry_core::TokenCounter>> {
        crate::Tiktoken::for_model(&self.model)
            .map(|t| std::sync::Arc::new(t) as std::sync::Arc<dyn agentry_core::TokenCounter>)
    }
}

impl OpenAiResponsesBuilder {
    fn new(model: String, http: HttpConfig) -> Self {
        OpenAiResponsesBuilder {
            model,
            http,
            params: ModelParams::default(),
            store: false,
            encrypted_reasoning: false,
        }
    }

    shared_builder_methods!();

    /// Whether OpenAI stores the responses (default off: every turn sends the whole
    /// conversation, so runs resume from agentry's own checkpoints).
    pub fn store(mut self, on: bool) -> Self {
        self.store = on;
        self
    }

    /// Asks for reasoning items with encrypted content and sends them back in later turns
    /// (default off; for reasoning models).
    pub fn encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = on;
        self
    }

    /// The client. Fails when OpenAI's own API is addressed without a key, or when the base
    /// URL or a header is invalid.
    pub fn build(self) -> Result<OpenAiResponses, Error> {
        super::require_key(&self.http)?;
        let endpoint = Endpoint::new(
            format!("openai-responses:{}", self.model),
            &self.http,
            "/responses",
            super::ENV,
        )?;
        Ok(OpenAiResponses {
            model: self.model,
            endpoint,
            params: self.params,
            store: self.store,
            encrypted_reasoning: self.encrypted_reasoning,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_request::weather_request;
    use agentry_core::{ThinkingBlock, ToolCall, ToolResult};

    #[test]
    fn history_becomes_input_items_with_reasoning_sent_back() {
        let reasoning =
            json!([{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"}]);
        let mut request = weather_request([
            Message::user("weather?"),
            Message::Assistant {
                content: "Checking.".into(),
                thinking: Some(ThinkingBlock {
                    text: "use the tool".into(),
                    signature: None,
                    replay: Some(reasoning.clone()),
                }),
                tool_calls: vec![ToolCall::new("c1", "get_weather", &json!({}))],
            },
            Message::Tool(ToolResult::ok("c1", "get_weather", "sunny")),
        ]);
        request.params.max_tokens = Some(10);
        request.output_schema = Some(std::sync::Arc::new(json!({"type": "object"})));
        let model = OpenAiResponses::builder("m")
            .base_url("http://127.0.0.1:1/v1")
            .build()
            .unwrap();
        let body = model.body(&request).unwrap();
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["input"][1], reasoning[0]);
        assert_eq!(body["input"][2]["role"], "assistant");
        assert_eq!(body["input"][3]["type"], "function_call");
        assert_eq!(body["input"][4]["type"], "function_call_output");
        assert_eq!(body["input"][4]["call_id"], "c1");
        assert_eq!(body["max_output_tokens"], 10);
        assert_eq!(body["store"], false);
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["name"], "output");
        assert_eq!(body["text"]["format"]["schema"]["type"], "object");
    }
}
