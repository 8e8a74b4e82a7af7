//! Decoding a streamed Responses API turn (`response.*` events).

use crate::assemble::ToolCalls;
use crate::http::{DecodeError, Decoder, Flow, TurnEnd};
use agentry_core::{FinishReason, ModelEvent, Usage};
use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<Value>,
    #[serde(default)]
    output_tokens_details: Option<Value>,
}

/// The decoder of one Responses turn.
#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    calls: ToolCalls,
    called: bool,
    reasoning_items: Vec<Value>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<ModelEvent>) -> Result<Flow, DecodeError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Flow::More);
        }
        let ev: Envelope =
            serde_json::from_str(data).map_err(|e| DecodeError::bad_json(event, &e))?;
        let index = ev.output_index.unwrap_or(0);
        match ev.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                push_piece(out, ev.delta, ModelEvent::TextDelta)
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                push_piece(out, ev.delta, ModelEvent::ThinkingDelta)
            }
            "response.output_item.added" => {
                if let Some(item) = ev.item.as_ref().filter(|i| is_type(i, "function_call")) {
                    self.calls.piece(
                        index,
                        str_field(item, "call_id"),
                        str_field(item, "name"),
                        str_field(item, "arguments"),
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                self.calls.piece(index, None, None, ev.delta.as_deref());
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = ev.arguments.as_deref() {
                    self.calls.set_arguments(index, arguments);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = ev.item {
                    self.item_done(index, item, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = ev.response.unwrap_or_default();
                self.finished(&response, out);
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let response = ev.response.unwrap_or_default();
                let error = response.get("error").cloned().unwrap_or(response);
                return Err(DecodeError::reported(&error));
            }
            "error" => {
                let error: Value = serde_json::from_str(data).unwrap_or_default();
                return Err(DecodeError::reported(&error));
            }
            _ => {}
        }
        Ok(Flow::More)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<TurnEnd, DecodeError> {
        let finish = self.finish.take().ok_or_else(|| {
            DecodeError::unreadable("the stream ended before `response.completed`")
        })?;
        if !self.reasoning_items.is_empty() {
            out.push(ModelEvent::ThinkingReplay(Value::Array(std::mem::take(
                &mut self.reasoning_items,
            ))));
        }
        Ok(TurnEnd {
            usage: self.usage.take(),
            finish,
        })
    }

    fn partial(&self) -> Option<String> {
        self.calls.describe()
    }
}

impl ResponsesDecoder {
    fn item_done(&mut self, index: usize, item: Value, out: &mut Vec<ModelEvent>) {
        if is_type(&item, "function_call") {
            if let Some(arguments) = str_field(&item, "arguments").filter(|a| !a.is_empty()) {
                self.calls.set_arguments(index, arguments);
            }
            self.calls
                .piece(index, str_field(&item, "call_id"), None, None);
            if let Some(call) = self.calls.take(index) {
                self.called = true;
                out.push(ModelEvent::ToolCall(call));
            }
        } else if is_type(&item, "reasoning") && item.get("encrypted_content").is_some() {
            self.reasoning_items.push(item);
        }
    }

    fn finished(&mut self, response: &Value, out: &mut Vec<ModelEvent>) {
        // Calls whose item never closed still count: the server sent their arguments.
        for call in self.calls.drain() {
            self.called = true;
            out.push(ModelEvent::ToolCall(call));
        }
        if let Some(usage) = response.get("usage")
            && let Ok(u) = serde_json::from_value::<ResponsesUsage>(usage.clone())
        {
            let detail = |d: &Option<Value>, name: &str| {
                d.as_ref()
                    .and_then(|d| d.get(name))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            self.usage = Some(Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cached_input_tokens: detail(&u.input_tokens_details, "cached_tokens"),
                reasoning_tokens: detail(&u.output_tokens_details, "reasoning_tokens"),
                ..Usage::default()
            });
        }
        let incomplete = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        self.finish = Some(match incomplete {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if self.called => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        });
    }
}

fn push_piece(out: &mut Vec<ModelEvent>, piece: Option<String>, wrap: fn(String) -> ModelEvent) {
    if let Some(piece) = piece.filter(|p| !p.is_empty()) {
        out.push(wrap(piece));
    }
}

fn is_type(item: &Value, kind: &str) -> bool {
    item.get("type").and_then(Value::as_str) == Some(kind)
}

fn str_field<'v>(item: &'v Value, name: &str) -> Option<&'v str> {
    item.get(name).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(d: &mut ResponsesDecoder, data: Value) -> (Flow, Vec<ModelEvent>) {
        let event = Event {
            data: data.to_string(),
            ..Event::default()
        };
        let mut out = Vec::new();
        (d.event(&event, &mut out).unwrap(), out)
    }

    #[test]
    fn function_calls_assemble_from_argument_deltas() {
        let mut d = ResponsesDecoder::default();
        feed(
            &mut d,
            serde_json::json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "function_call", "call_id": "c9", "name": "get_weather", "arguments": ""}}),
        );
        for piece in ["{\"ci", "ty\":\"Paris\"}"] {
            feed(
                &mut d,
                serde_json::json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": piece}),
            );
        }
        let (_, call) = feed(
            &mut d,
            serde_json::json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"type": "function_call", "call_id": "c9", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}),
        );
        match &call[..] {
            [ModelEvent::ToolCall(c)] => {
                assert_eq!(
                    (c.id.as_str(), c.arguments.as_str()),
                    ("c9", "{\"city\":\"Paris\"}")
                )
            }
            other => panic!("{other:?}"),
        }
        let (flow, _) = feed(
            &mut d,
            serde_json::json!({"type": "response.completed", "response": {"status": "completed",
                "usage": {"input_tokens": 5, "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 1}}}}),
        );
        assert_eq!(flow, Flow::Done);
        let mut out = Vec::new();
        let closing = d.end(&mut out).unwrap();
        assert_eq!(closing.finish, FinishReason::ToolCalls);
        assert!(matches!(
            closing.usage,
            Some(Usage {
                reasoning_tokens: 1,
                ..
            })
        ));
    }

    #[test]
    fn an_incomplete_response_ends_on_length() {
        let mut d = ResponsesDecoder::default();
        feed(
            &mut d,
            serde_json::json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}}}),
        );
        let mut out = Vec::new();
        let closing = d.end(&mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(
            closing,
            TurnEnd {
                usage: None,
                finish: FinishReason::Length
            }
        );
    }
}
