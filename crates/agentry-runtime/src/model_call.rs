//! The model phase of a step: BeforeModel, around-model middleware, the streamed call with its
//! TextDelta and Thinking hooks, AfterModel (with retries).

use super::driver::Driver;
use super::limits::Limits;
use super::scope::Scope;
use crate::held_text::HeldText;
use agentry_core::deadline::{Elapsed, within};
use agentry_core::hooks::{
    AfterModel, BeforeModel, Event, Events, ModelOutcome, Next, Terminal, TextDelta, Thinking,
};
use agentry_core::{
    AgentDef, Error, FinishReason, Message, Model, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, ModelResponse, RunEvent, RunMachine, ThinkingBlock,
};
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

impl Driver {
    /// Asks the model (or a hook) for the next turn of step `step`.
    pub(crate) async fn model_phase(&mut self, step: u32) -> Result<ModelResponse, Error> {
        ModelPhase {
            def: &self.def,
            scope: &self.scope,
            model: &self.model,
            model_name: &self.model_name,
            limits: &self.rt.limits,
            machine: &mut self.machine,
            model_open: &mut self.model_open,
        }
        .run(step)
        .await
    }
}

/// The model phase of one step, borrowing from its run what it needs: the agent, the hooks, the
/// model and its limits, and (to write) the run's machine and whether a BeforeModel is open.
struct ModelPhase<'d> {
    def: &'d AgentDef,
    scope: &'d Scope,
    model: &'d Arc<dyn Model>,
    model_name: &'d Arc<str>,
    limits: &'d Limits,
    machine: &'d mut RunMachine,
    /// True between BeforeModel and AfterModel (a run interrupted meanwhile closes it).
    model_open: &'d mut bool,
}

impl ModelPhase<'_> {
    /// The turn of step `step`: BeforeModel, the model call (or a hook's answer), AfterModel,
    /// and again with the hooks' feedback while AfterModel asks for a retry.
    async fn run(self, step: u32) -> Result<ModelResponse, Error> {
        let mut retries = 0;
        loop {
            let request = ModelRequest {
                system: self.def.instructions.clone(),
                messages: self.machine.messages.clone(),
                tools: self.def.specs.clone(),
                params: self.def.params.clone(),
                output_schema: self.def.output.as_ref().map(|o| o.schema.clone()),
            };
            // What the agent asked, kept (O(1): shared parts) to report what hooks changed.
            let reported = self.scope.engine.has_event_stream();
            let mut asked = None;
            let (request, answered) = if self.scope.wants(Events::BEFORE_MODEL) {
                if reported {
                    asked = Some(request.clone());
                }
                let mut ev = Some(BeforeModel::new(request));
                self.scope.run_hooks(&mut ev).await?;
                // Open until AfterModel: a run interrupted meanwhile closes it.
                *self.model_open = self.scope.wants(Events::AFTER_MODEL);
                ev.expect("hooks give the event back").into_parts()
            } else {
                (request, None)
            };
            let answered_by_hook = answered.is_some();
            let response = match answered {
                Some(r) => r,
                None => {
                    if reported {
                        let first = step == 1 && retries == 0;
                        crate::model_request::report(self.scope, &request, asked.as_ref(), first);
                    }
                    self.call_model(request).await?
                }
            };
            if !self.scope.wants(Events::AFTER_MODEL) {
                return Ok(response);
            }
            let model = if answered_by_hook {
                Arc::from("")
            } else {
                self.model_name.clone()
            };
            *self.model_open = false;
            let mut slot = Some(AfterModel::from_model(model, response));
            self.scope.run_hooks(&mut slot).await?;
            let ev = slot.expect("hooks give the event back");
            let Some(feedback) = ev.retry_feedback() else {
                return Ok(ev.response);
            };
            // The rejected response was paid for: it counts in the run's usage.
            if !answered_by_hook {
                self.machine.reject_response(ev.response.usage);
            }
            retries += 1;
            if retries > self.def.max_model_retries {
                return Err(Error::TooManyRetries {
                    agent: self.def.name.to_string(),
                    step,
                    limit: self.def.max_model_retries,
                });
            }
            let feedback = feedback.to_string();
            if !ev.response.text.is_empty() {
                let m = self.machine.push(Message::assistant(ev.response.text));
                self.scope.added(m).await?;
            }
            let m = self.machine.add_user(feedback);
            self.scope.added(m).await?;
        }
    }

    /// One model turn, through the around-model middleware, within the turn timeout.
    async fn call_model(&self, request: ModelRequest) -> Result<ModelResponse, Error> {
        let limit = self.limits.model_turn_timeout;
        let idle = self.limits.model_idle_timeout;
        let turn = async move {
            if !self.scope.wants(Events::AROUND_MODEL) {
                return stream_model(&*self.model, self.scope, &request, idle).await;
            }
            let chain: Arc<[_]> = self.scope.hooks.around_model().into();
            let model = self.model.clone();
            let scope = self.scope.clone();
            let terminal: Arc<dyn Terminal<ModelRequest, ModelOutcome>> =
                Arc::new(move |req: ModelRequest| {
                    let model = model.clone();
                    let scope = scope.clone();
                    async move { stream_model(&*model, &scope, &req, idle).await }
                });
            Next::start(
                chain,
                terminal,
                self.scope.context().clone(),
                self.scope.hooks.clone(),
            )
            .run(request)
            .await
        };
        match within(limit, turn).await {
            Ok(outcome) => outcome,
            Err(Elapsed) => Err(turn_timed_out(self.model.name(), limit).into()),
        }
    }
}

/// The error of a model turn that overran the turn timeout.
pub(crate) fn turn_timed_out(model: &str, limit: Duration) -> ModelError {
    ModelError::new(
        model,
        ModelErrorKind::Timeout,
        format!(
            "the turn did not finish within {limit:?}, the model turn timeout; raise it for long answers or slow models: `model_turn_timeout` under `[limits]` in agentry.toml, `Runtime::model_turn_timeout` in code"
        ),
    )
}

/// Streams one model turn, firing TextDelta and Thinking hooks and stream events, and assembles
/// the response. The stream may go `idle` without an event; keep-alives are not events.
pub(crate) async fn stream_model(
    model: &dyn Model,
    scope: &Scope,
    request: &ModelRequest,
    idle: Duration,
) -> Result<ModelResponse, Error> {
    let mut stream = model.stream(request);
    let mut response = ModelResponse::default();
    // With a redactor, streamed text reaches the run's events a line at a time, masked whole.
    let redactor = scope.engine.redactor().cloned();
    let mut held_text = HeldText::default();
    let mut held_thinking = HeldText::default();
    let mut finish = None;
    // One timer for the whole stream, armed the first time the stream makes us wait and
    // re-armed only when it fires: waiting for an event costs a clock read, not a timer update
    // per piece of text, and a stream that never waits arms none.
    let mut waiting_since = Instant::now();
    let mut quiet = std::pin::pin!(None::<Sleep>);
    loop {
        let next = std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = stream.poll_next_unpin(cx) {
                return Poll::Ready(Some(item));
            }
            if quiet.is_none() {
                quiet.set(Some(tokio::time::sleep_until(waiting_since + idle)));
            }
            let timer = quiet.as_mut().as_pin_mut().expect("armed above");
            timer.poll(cx).map(|()| None)
        });
        let Some(item) = next.await else {
            let until = waiting_since + idle;
            if Instant::now() < until {
                let timer = quiet.as_mut().as_pin_mut().expect("it fired");
                timer.reset(until);
                continue;
            }
            return Err(ModelError::new(
                model.name(),
                ModelErrorKind::Timeout,
                format!(
                    "the stream sent no event for {idle:?}, the model idle timeout (keep-alive comments do not count); check the server, or raise it for slow models: `model_idle_timeout` under `[limits]` in agentry.toml, `Runtime::model_idle_timeout` in code"
                ),
            )
            .into());
        };
        let Some(item) = item else { break };
        let item = item?;
        match item {
            ModelEvent::TextDelta(text) => {
                let text = match pass_through::<TextDelta>(scope, text).await? {
                    Piece::Keep(text) => text,
                    Piece::Abort(reason) => {
                        finish = Some(FinishReason::Aborted(reason));
                        break;
                    }
                };
                response.text.push_str(&text);
                let text = match &redactor {
                    Some(r) => held_text.push(&text, r.as_ref()),
                    None => Some(text),
                };
                if let Some(text) = text {
                    scope.engine.send_event(|p| RunEvent::TextDelta {
                        text,
                        agent_path: p.clone(),
                        run_id: None,
                    });
                }
            }
            ModelEvent::ThinkingDelta(text) => {
                let text = match pass_through::<Thinking>(scope, text).await? {
                    Piece::Keep(text) => text,
                    Piece::Abort(reason) => {
                        finish = Some(FinishReason::Aborted(reason));
                        break;
                    }
                };
                response
                    .thinking
                    .get_or_insert_with(ThinkingBlock::default)
                    .text
                    .push_str(&text);
                let text = match &redactor {
                    Some(r) => held_thinking.push(&text, r.as_ref()),
                    None => Some(text),
                };
                if let Some(text) = text {
                    scope.engine.send_event(|p| RunEvent::ThinkingDelta {
                        text,
                        agent_path: p.clone(),
                        run_id: None,
                    });
                }
            }
            ModelEvent::ThinkingSignature(signature) => {
                response
                    .thinking
                    .get_or_insert_with(ThinkingBlock::default)
                    .signature = Some(signature);
            }
            ModelEvent::ThinkingReplay(items) => {
                response
                    .thinking
                    .get_or_insert_with(ThinkingBlock::default)
                    .replay = Some(items);
            }
            ModelEvent::ToolCall(call) => response.tool_calls.push(call),
            ModelEvent::Usage(usage) => response.usage = usage,
            ModelEvent::Finish(reason) => finish = Some(reason),
            ModelEvent::Progress(progress) => {
                scope.engine.send_event(|p| RunEvent::ModelProgress {
                    progress,
                    agent_path: p.clone(),
                    run_id: None,
                })
            }
        }
        waiting_since = Instant::now();
    }
    if let Some(r) = &redactor {
        if let Some(text) = held_thinking.flush(r.as_ref()) {
            scope.engine.send_event(|p| RunEvent::ThinkingDelta {
                text,
                agent_path: p.clone(),
                run_id: None,
            });
        }
        if let Some(text) = held_text.flush(r.as_ref()) {
            scope.engine.send_event(|p| RunEvent::TextDelta {
                text,
                agent_path: p.clone(),
                run_id: None,
            });
        }
    }
    if matches!(finish, Some(FinishReason::Aborted(_))) {
        response.tool_calls.clear();
    }
    response.finish_reason = finish.unwrap_or(if response.tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    });
    Ok(response)
}

/// A streamed piece after its hooks: what to record and stream, or why the stream was aborted.
enum Piece {
    Keep(String),
    Abort(String),
}

/// The streamed events, TextDelta and Thinking: a piece of text hooks may rewrite or abort on.
trait StreamedPiece: Event {
    const WANTED: Events;
    fn new(text: String) -> Self;
    fn into_piece(self) -> Piece;
}

macro_rules! streamed_piece {
    ($event:ident, $flag:ident) => {
        impl StreamedPiece for $event {
            const WANTED: Events = Events::$flag;
            fn new(text: String) -> Self {
                $event::new(text)
            }
            fn into_piece(self) -> Piece {
                match self.aborted() {
                    Some(reason) => Piece::Abort(reason.to_string()),
                    None => Piece::Keep(self.text),
                }
            }
        }
    };
}
streamed_piece!(TextDelta, TEXT_DELTA);
streamed_piece!(Thinking, THINKING);

/// Runs the hooks of a streamed piece, if any: they see it first, may rewrite it (redaction) or
/// abort the stream, and only what they let through is recorded and streamed.
async fn pass_through<E: StreamedPiece>(scope: &Scope, text: String) -> Result<Piece, Error> {
    if !scope.wants(E::WANTED) {
        return Ok(Piece::Keep(text));
    }
    let mut slot = Some(E::new(text));
    scope.run_hooks(&mut slot).await?;
    Ok(slot.expect("hooks give the event back").into_piece())
}
