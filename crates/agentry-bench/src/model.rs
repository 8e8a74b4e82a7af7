//! The benchmark's scripted model: call n of a run returns `echo({"text":"ping"})` with call id
//! `call_n` while n ≤ S, then the final text `done`. No sleeping, no I/O, no request recording.

use agentry::{FinishReason, Model, ModelEvent, ModelRequest, ModelStream, ToolCall};
use futures::StreamExt;

/// Echo-calling model for a run of `steps` tool steps.
pub(crate) struct EchoScript {
    pub steps: u32,
    /// Yield to the scheduler once per call, so that concurrent runs (W3) really interleave
    /// instead of each finishing on its first poll.
    pub yield_per_call: bool,
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
        let events = futures::stream::iter(events);
        if !self.yield_per_call {
            return Box::pin(events);
        }
        let pause = futures::stream::once(tokio::task::yield_now())
            .filter_map(|()| futures::future::ready(None));
        Box::pin(pause.chain(events))
    }
}
