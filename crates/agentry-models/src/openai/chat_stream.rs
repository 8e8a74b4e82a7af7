//! Decoding a streamed Chat Completions turn (`chat.completion.chunk` events).

use crate::assemble::ToolCalls;
use crate::http::{DecodeError, Decoder, Flow, TurnEnd};
use agentry_core::{FinishReason, ModelEvent, Usage};
use eventsource_stream::Event;
use serde::Deserialize;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, Ollama.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// The decoder of one Chat Completions turn.
#[derive(Default)]
pub(crate) struct ChatDecoder {
    calls: ToolCalls,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<ModelEvent>) -> Result<Flow, DecodeError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Flow::More);
        }
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| DecodeError::bad_json(event, &e))?;
        if let Some(error) = chunk.error {
            return Err(DecodeError::reported(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        for choice in chunk.choices.unwrap_or_default() {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                out.extend(self.calls.drain().map(ModelEvent::ToolCall));
                self.finish = Some(finish_reason(&reason));
            }
        }
        Ok(Flow::More)
    }

    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<TurnEnd, DecodeError> {
        let finish = self.finish.take().ok_or_else(|| {
            DecodeError::unreadable(
                "the stream ended before the model finished its turn (no `finish_reason`)",
            )
        })?;
        Ok(TurnEnd {
            usage: self.usage.take(),
            finish,
        })
    }

    fn partial(&self) -> Option<String> {
        self.calls.describe()
    }
}

impl ChatDecoder {
    fn delta(&mut self, delta: Delta, out: &mut Vec<ModelEvent>) {
        for thinking in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !thinking.is_empty() {
                out.push(ModelEvent::ThinkingDelta(thinking));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                out.push(ModelEvent::TextDelta(text));
            }
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            let function = call.function.as_ref();
            self.calls.piece(
                call.index.unwrap_or(position),
                call.id.as_deref(),
                function.and_then(|f| f.name.as_deref()),
                function.and_then(|f| f.arguments.as_deref()),
            );
        }
    }
}

impl From<ChatUsage> for Usage {
    fn from(u: ChatUsage) -> Usage {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: u
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            ..Usage::default()
        }
    }
}

/// The finish reason a Chat Completions server names.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut ChatDecoder, data: &str) -> (Flow, Vec<ModelEvent>) {
        let event = Event {
            data: data.to_owned(),
            ..Event::default()
        };
        let mut out = Vec::new();
        let flow = decoder.event(&event, &mut out).unwrap();
        (flow, out)
    }

    #[test]
    fn several_calls_with_split_arguments_come_out_whole_at_the_finish() {
        let mut d = ChatDecoder::default();
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
        );
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"get_time","arguments":"{}"}}]}}]}"#,
        );
        let (_, none) = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}}]}"#,
        );
        assert!(none.is_empty());
        let (_, calls) = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        );
        let names: Vec<_> = calls
            .iter()
            .map(|e| match e {
                ModelEvent::ToolCall(c) => (c.name.as_str(), c.arguments.as_str()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [("get_weather", "{\"city\":\"Paris\"}"), ("get_time", "{}")]
        );
        feed(
            &mut d,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#,
        );
        assert_eq!(feed(&mut d, "[DONE]").0, Flow::Done);
        let mut out = Vec::new();
        let closing = d.end(&mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(
            closing,
            TurnEnd {
                usage: Some(Usage {
                    input_tokens: 9,
                    output_tokens: 4,
                    cached_input_tokens: 2,
                    ..Usage::default()
                }),
                finish: FinishReason::ToolCalls,
            }
        );
    }

    #[test]
    fn a_stream_without_a_finish_is_incomplete() {
        let mut d = ChatDecoder::default();
        feed(&mut d, r#"{"choices":[{"delta":{"content":"Hel"}}]}"#);
        let err = d.end(&mut Vec::new()).unwrap_err();
        assert!(err.message.contains("finish_reason"));
    }

    #[test]
    fn reasoning_comes_under_either_field_name() {
        let mut d = ChatDecoder::default();
        let (_, a) = feed(
            &mut d,
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
        );
        let (_, b) = feed(&mut d, r#"{"choices":[{"delta":{"reasoning":"ok"}}]}"#);
        assert_eq!(a, [ModelEvent::ThinkingDelta("hm".into())]);
        assert_eq!(b, [ModelEvent::ThinkingDelta("ok".into())]);
    }
}
