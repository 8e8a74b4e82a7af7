//! The benchmark's scripted model: call n of a run returns `echo({"text":"ping"})` with call id
//! `call_n` while n ≤ S, then the final text `done`. No sleeping, no I/O, no request recording.

use agentry::{FinishReason, Model, ModelEvent, ModelRequest, ModelStream, ToolCall};

/// Echo-calling model for a run of `steps` tool steps.
pub struct EchoScript {
    pub steps: u32,
}

impl Model for EchoScript {
    fn name(&self) -> &str {
        "bench-echo"
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        // The history holds the input plus two messages per completed step, so the call number
        // follows from its length without any shared counter.
        let n = (request.messages.len() as u32).div_ceil(2);
        let events = if n <= self.steps {
            [
                Ok(ModelEvent::ToolCall(ToolCall {
                    id: format!("call_{n}"),
                    name: "echo".to_string(),
                    arguments: r#"{"text":"ping"}"#.to_string(),
                })),
                Ok(ModelEvent::Finish(FinishReason::ToolCalls)),
            ]
        } else {
            [
                Ok(ModelEvent::TextDelta("done".to_string())),
                Ok(ModelEvent::Finish(FinishReason::Stop)),
            ]
        };
        Box::pin(futures::stream::iter(events))
    }
}
