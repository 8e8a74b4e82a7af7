//! Decoding a streamed Messages turn: `message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping` and `error` events.

use crate::assemble::ToolCalls;
use crate::http::{DecodeError, Decoder, Flow, TurnEnd};
use agentry_core::{FinishReason, ModelEvent, Usage};
use eventsource_stream::Event;
use serde_json::{Value, json};

/// The decoder of one Messages turn.
#[derive(Default)]
pub(crate) struct MessagesDecoder {
    calls: ToolCalls,
    /// The thinking block being streamed: its index, text and signature.
    thinking: Option<(usize, String, String)>,
    /// Thinking and redacted-thinking blocks, as the API wants them back.
    replay: Vec<Value>,
    /// Usage figures as the API reports them: input at the start, output (cumulative) later.
    fresh_input: u64,
    cache_write: u64,
    cache_read: u64,
    output: u64,
    stop_reason: Option<String>,
    stopped: bool,
}

impl Decoder for MessagesDecoder {
    fn event(&mut self, event: &Event, out: &mut Vec<ModelEvent>) -> Result<Flow, DecodeError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let ev: Value = serde_json::from_str(data).map_err(|e| DecodeError::bad_json(event, &e))?;
        let kind = ev
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        let index = ev.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match kind {
            "message_start" => {
                if let Some(usage) = ev.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let block = ev.get("content_block").cloned().unwrap_or_default();
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => self.calls.piece(
                        index,
                        block.get("id").and_then(Value::as_str),
                        block.get("name").and_then(Value::as_str),
                        None,
                    ),
                    Some("thinking") => {
                        let text = str_at(&block, "thinking").to_owned();
                        if !text.is_empty() {
                            out.push(ModelEvent::ThinkingDelta(text.clone()));
                        }
                        let signature = str_at(&block, "signature").to_owned();
                        self.thinking = Some((index, text, signature));
                    }
                    Some("redacted_thinking") => self.replay.push(block),
                    Some("text") => {
                        let text = str_at(&block, "text");
                        if !text.is_empty() {
                            out.push(ModelEvent::TextDelta(text.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = ev.get("delta").cloned().unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => push_text(out, str_at(&delta, "text"), false),
                    Some("thinking_delta") => {
                        let piece = str_at(&delta, "thinking");
                        if let Some((_, text, _)) = &mut self.thinking {
                            text.push_str(piece);
                        }
                        push_text(out, piece, true);
                    }
                    Some("signature_delta") => {
                        if let Some((_, _, signature)) = &mut self.thinking {
                            signature.push_str(str_at(&delta, "signature"));
                        }
                    }
                    Some("input_json_delta") => {
                        self.calls
                            .piece(index, None, None, Some(str_at(&delta, "partial_json")));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(call) = self.calls.take(index) {
                    out.push(ModelEvent::ToolCall(call));
                }
                if self.thinking.as_ref().is_some_and(|(i, _, _)| *i == index) {
                    let (_, text, signature) = self.thinking.take().expect("checked");
                    self.replay.push(
                        json!({"type": "thinking", "thinking": text, "signature": signature}),
                    );
                }
            }
            "message_delta" => {
                if let Some(reason) = ev.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = ev.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => return Err(DecodeError::reported(&ev)),
            // `ping` and event types added later.
            _ => {}
        }
        Ok(Flow::More)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<TurnEnd, DecodeError> {
        if !self.stopped {
            return Err(DecodeError::unreadable(
                "the stream ended before `message_stop`",
            ));
        }
        // Calls whose block never closed still count: the server sent their input.
        out.extend(self.calls.drain().map(ModelEvent::ToolCall));
        let signature = self.replay.iter().rev().find_map(|b| {
            b.get("signature")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        });
        if let Some(signature) = signature {
            out.push(ModelEvent::ThinkingSignature(signature));
        }
        if !self.replay.is_empty() {
            out.push(ModelEvent::ThinkingReplay(Value::Array(std::mem::take(
                &mut self.replay,
            ))));
        }
        let finish = match self.stop_reason.as_deref() {
            None | Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
            Some("tool_use") => FinishReason::ToolCalls,
            Some("max_tokens") => FinishReason::Length,
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        // Input tokens include the cached ones, as [`Usage`] defines them.
        let usage = Usage {
            input_tokens: self.fresh_input + self.cache_write + self.cache_read,
            output_tokens: self.output,
            cached_input_tokens: self.cache_read,
            cache_write_input_tokens: self.cache_write,
            reasoning_tokens: 0,
        };
        Ok(TurnEnd {
            usage: Some(usage),
            finish,
        })
    }

    fn partial(&self) -> Option<String> {
        self.calls.describe()
    }
}

impl MessagesDecoder {
    /// Reads a usage object: the API sends input figures at the start and cumulative output
    /// figures at the end; a figure it leaves out keeps its value.
    fn read_usage(&mut self, usage: &Value) {
        let fields = [
            ("input_tokens", &mut self.fresh_input),
            ("cache_creation_input_tokens", &mut self.cache_write),
            ("cache_read_input_tokens", &mut self.cache_read),
            ("output_tokens", &mut self.output),
        ];
        for (name, figure) in fields {
            if let Some(value) = usage.get(name).and_then(Value::as_u64) {
                *figure = value;
            }
        }
    }
}

fn str_at<'v>(value: &'v Value, name: &str) -> &'v str {
    value.get(name).and_then(Value::as_str).unwrap_or("")
}

fn push_text(out: &mut Vec<ModelEvent>, piece: &str, thinking: bool) {
    if piece.is_empty() {
        return;
    }
    out.push(if thinking {
        ModelEvent::ThinkingDelta(piece.to_owned())
    } else {
        ModelEvent::TextDelta(piece.to_owned())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[Value]) -> Vec<ModelEvent> {
        let mut d = MessagesDecoder::default();
        let mut out = Vec::new();
        for ev in events {
            let event = Event {
                data: ev.to_string(),
                ..Event::default()
            };
            d.event(&event, &mut out).unwrap();
        }
        let closing = d.end(&mut out).unwrap();
        out.extend(closing.events());
        out
    }

    #[test]
    fn thinking_text_and_a_split_tool_call_with_cache_usage() {
        let out = run(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need weather."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s1"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "zzz"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(out[0], ModelEvent::ThinkingDelta("Need weather.".into()));
        match &out[1] {
            ModelEvent::ToolCall(c) => assert_eq!(c.arguments, "{\"city\":\"Paris\"}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(out[2], ModelEvent::ThinkingSignature("s1".into()));
        match &out[3] {
            ModelEvent::ThinkingReplay(Value::Array(blocks)) => {
                assert_eq!(blocks[0]["signature"], "s1");
                assert_eq!(blocks[1]["type"], "redacted_thinking");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            out[4],
            ModelEvent::Usage(Usage {
                input_tokens: 160,
                output_tokens: 30,
                cached_input_tokens: 50,
                cache_write_input_tokens: 100,
                reasoning_tokens: 0,
            })
        );
        assert_eq!(out[5], ModelEvent::Finish(FinishReason::ToolCalls));
    }

    #[test]
    fn an_overloaded_error_event_may_be_retried() {
        let err = DecodeError::reported(
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        assert_eq!(err.kind, agentry_core::ModelErrorKind::Server);
        assert!(err.message.contains("Overloaded"));
    }
}
