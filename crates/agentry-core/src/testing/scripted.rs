//! The scripted model: plays back turns written in advance.

use crate::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelStream,
    ToolCall, Usage,
};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One scripted model turn: the events it streams, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedTurn {
    events: Vec<ModelEvent>,
    error: Option<(ModelErrorKind, String)>,
}

impl ScriptedTurn {
    /// An empty turn; add to it with the builder methods.
    pub fn new() -> Self {
        ScriptedTurn::default()
    }

    /// A turn that answers with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedTurn::new().with_text(text)
    }

    /// A turn that calls one tool.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        ScriptedTurn::new().with_tool_call(name, arguments)
    }

    /// A turn that fails with a model error of `kind`.
    pub fn error(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ScriptedTurn {
            events: Vec::new(),
            error: Some((kind, message.into())),
        }
    }

    /// Streams `text` as one delta.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.events.push(ModelEvent::TextDelta(text.into()));
        self
    }

    /// Streams each piece as its own delta.
    pub fn with_text_deltas<I, T>(mut self, pieces: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.events
            .extend(pieces.into_iter().map(|p| ModelEvent::TextDelta(p.into())));
        self
    }

    /// Streams reasoning before the answer.
    pub fn with_thinking(mut self, text: impl Into<String>) -> Self {
        self.events.push(ModelEvent::ThinkingDelta(text.into()));
        self
    }

    /// Adds a tool call with JSON arguments (its id is chosen when the turn is played:
    /// `call_<turn>_<index>`).
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.with_raw_tool_call(name, arguments.to_string())
    }

    /// Adds a tool call whose arguments are the given text, verbatim: use it to test malformed
    /// JSON.
    pub fn with_raw_tool_call(
        mut self,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.events.push(ModelEvent::ToolCall(ToolCall {
            id: String::new(),
            name: name.into(),
            arguments: arguments.into(),
        }));
        self
    }

    /// Adds a tool call with a chosen id.
    pub fn with_tool_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.events
            .push(ModelEvent::ToolCall(ToolCall::new(id, name, &arguments)));
        self
    }

    /// Adds a tool call as it is: its id (an empty one is chosen when the turn is played) and
    /// its arguments' text verbatim. Use it to play back recorded turns.
    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.events.push(ModelEvent::ToolCall(call));
        self
    }

    /// Reports token usage for the turn.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.events
            .push(ModelEvent::Usage(Usage::new(input_tokens, output_tokens)));
        self
    }

    /// Ends the turn with this finish reason (otherwise `tool_calls` or `stop` is inferred).
    pub fn with_finish(mut self, reason: FinishReason) -> Self {
        self.events.push(ModelEvent::Finish(reason));
        self
    }

    /// Fails the turn after the events added so far: a stream that breaks in the middle.
    pub fn then_error(mut self, kind: ModelErrorKind, message: impl Into<String>) -> Self {
        self.error = Some((kind, message.into()));
        self
    }

    fn play(mut self, turn: u32, model: &str) -> Vec<Result<ModelEvent, ModelError>> {
        let mut index = 0;
        let mut has_calls = false;
        let mut has_finish = false;
        for ev in &mut self.events {
            match ev {
                ModelEvent::ToolCall(call) => {
                    index += 1;
                    has_calls = true;
                    if call.id.is_empty() {
                        call.id = format!("call_{turn}_{index}");
                    }
                }
                ModelEvent::Finish(_) => has_finish = true,
                _ => {}
            }
        }
        let mut out: Vec<Result<ModelEvent, ModelError>> =
            self.events.into_iter().map(Ok).collect();
        if let Some((kind, message)) = self.error {
            out.push(Err(ModelError::new(model, kind, message)));
        } else if !has_finish {
            out.push(Ok(ModelEvent::Finish(if has_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            })));
        }
        out
    }
}

type TurnFn = dyn Fn(u32, &ModelRequest) -> ScriptedTurn + Send + Sync;

struct Inner {
    name: String,
    turns: Mutex<VecDeque<ScriptedTurn>>,
    generator: Option<Box<TurnFn>>,
    scripted: AtomicU32,
    calls: AtomicU32,
    record: bool,
    requests: Mutex<Vec<ModelRequest>>,
}

/// A model that plays back scripted turns, in order, one per call.
///
/// Clones share the script and the recorded requests, so keep a clone to inspect what the agent
/// sent. When the script runs out, a call fails with an error that says so.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentry_core::{Model, ModelRequest, ModelEvent, History};
/// use agentry_core::testing::ScriptedModel;
/// use futures::StreamExt;
///
/// let model = ScriptedModel::new().text("hello");
/// let req = ModelRequest::new(History::new());
/// let events: Vec<_> = model.stream(&req).collect().await;
/// assert_eq!(events[0], Ok(ModelEvent::TextDelta("hello".into())));
/// assert_eq!(model.requests().len(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    inner: Arc<Inner>,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        ScriptedModel::new()
    }
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.inner.name)
            .field("calls", &self.calls())
            .field("remaining", &self.remaining())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ScriptedModel {
    /// A model with an empty script that records requests.
    pub fn new() -> Self {
        ScriptedModel {
            inner: Arc::new(Inner {
                name: "scripted".into(),
                turns: Mutex::new(VecDeque::new()),
                generator: None,
                scripted: AtomicU32::new(0),
                calls: AtomicU32::new(0),
                record: true,
                requests: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A model whose turns are computed: `f(n, request)` gives the turn of call `n` (1-based,
    /// counted over every call of this model, across runs; for a position within one run, look
    /// at `request.messages`). It never runs out, and does not record requests (benchmarks use it).
    pub fn from_fn(f: impl Fn(u32, &ModelRequest) -> ScriptedTurn + Send + Sync + 'static) -> Self {
        ScriptedModel {
            inner: Arc::new(Inner {
                name: "scripted".into(),
                turns: Mutex::new(VecDeque::new()),
                generator: Some(Box::new(f)),
                scripted: AtomicU32::new(0),
                calls: AtomicU32::new(0),
                record: false,
                requests: Mutex::new(Vec::new()),
            }),
        }
    }

    fn edit(self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                f(&mut inner);
                ScriptedModel {
                    inner: Arc::new(inner),
                }
            }
            Err(shared) => panic!(
                "ScriptedModel: configure the model before cloning it ({} clones exist)",
                Arc::strong_count(&shared)
            ),
        }
    }

    /// Names the model (the default is `scripted`).
    pub fn named(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.edit(|i| i.name = name)
    }

    /// Turns request recording on or off (on by default for scripted turns).
    pub fn record_requests(self, on: bool) -> Self {
        self.edit(|i| i.record = on)
    }

    /// Appends a turn.
    pub fn turn(self, turn: ScriptedTurn) -> Self {
        lock(&self.inner.turns).push_back(turn);
        self.inner.scripted.fetch_add(1, Ordering::Relaxed);
        self
    }

    /// Appends a turn that answers with text.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.turn(ScriptedTurn::text(text))
    }

    /// Appends a turn that calls one tool.
    pub fn tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.turn(ScriptedTurn::tool_call(name, arguments))
    }

    /// Appends a turn that calls several tools at once.
    pub fn tool_calls<N: Into<String>>(self, calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        let turn = calls
            .into_iter()
            .fold(ScriptedTurn::new(), |t, (n, a)| t.with_tool_call(n, a));
        self.turn(turn)
    }

    /// Appends a turn that fails.
    pub fn error(self, kind: ModelErrorKind, message: impl Into<String>) -> Self {
        self.turn(ScriptedTurn::error(kind, message))
    }

    /// The requests received so far (when recording).
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.inner.requests).clone()
    }

    /// The number of calls made so far.
    pub fn calls(&self) -> u32 {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// The number of scripted turns not yet played.
    pub fn remaining(&self) -> usize {
        lock(&self.inner.turns).len()
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let n = self.inner.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if self.inner.record {
            lock(&self.inner.requests).push(request.clone());
        }
        let turn = match &self.inner.generator {
            Some(f) => Some(f(n, request)),
            None => lock(&self.inner.turns).pop_front(),
        };
        let events = match turn {
            Some(t) => t.play(n, &self.inner.name),
            None => vec![Err(ModelError::new(
                self.inner.name.clone(),
                ModelErrorKind::Other,
                format!(
                    "the scripted model has no turn left for call {n} ({} were scripted); add turns with `.text(..)`, `.tool_call(..)` or `.turn(..)`",
                    self.inner.scripted.load(Ordering::Relaxed)
                ),
            ))],
        };
        Box::pin(futures::stream::iter(events))
    }
}
