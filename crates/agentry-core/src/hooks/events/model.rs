//! The `model` group: BeforeModel, AfterModel, TextDelta, Thinking.

use super::{Decides, form};
use crate::{ModelRequest, ModelResponse};
use serde::Serialize;
use std::sync::Arc;

/// A model call is about to be made. Hooks may rewrite the request or answer it themselves.
#[derive(Clone, Debug, Serialize)]
pub struct BeforeModel {
    /// The request (system prompt, messages, tools, parameters).
    #[serde(flatten, serialize_with = "form::request")]
    pub request: ModelRequest,
    #[serde(skip)]
    response: Option<Box<ModelResponse>>,
    #[serde(skip)]
    marks: u32,
}
impl BeforeModel {
    /// A new event.
    pub fn new(request: ModelRequest) -> Self {
        BeforeModel {
            request,
            response: None,
            marks: 0,
        }
    }
    /// Answers the call without calling the model.
    pub fn respond(&mut self, response: ModelResponse) {
        self.response = Some(Box::new(response));
        self.marks += 1;
    }
    /// The answer a hook gave, if any.
    pub fn response(&self) -> Option<&ModelResponse> {
        self.response.as_deref()
    }
    /// Splits the event into the request and the hook's answer.
    pub fn into_parts(self) -> (ModelRequest, Option<ModelResponse>) {
        (self.request, self.response.map(|r| *r))
    }
}
impl Decides for BeforeModel {
    fn decided(&self) -> bool {
        self.response.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// A model call returned. Hooks may rewrite the response or ask for a retry with feedback.
#[derive(Clone, Debug, Serialize)]
pub struct AfterModel {
    /// The response.
    #[serde(flatten, serialize_with = "form::response")]
    pub response: ModelResponse,
    /// The name of the model that answered (`Model::name`; empty when a BeforeModel hook
    /// answered in its place).
    model: Arc<str>,
    #[serde(skip)]
    retry: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl AfterModel {
    /// The name of the model that answered (`Model::name`; empty when a BeforeModel hook
    /// answered in its place).
    pub fn model(&self) -> &str {
        &self.model
    }
}
impl AfterModel {
    /// A new event.
    pub fn new(response: ModelResponse) -> Self {
        AfterModel::from_model("", response)
    }
    /// A new event for the answer of the model named `model`.
    pub fn from_model(model: impl Into<Arc<str>>, response: ModelResponse) -> Self {
        AfterModel {
            response,
            model: model.into(),
            retry: None,
            marks: 0,
        }
    }
    /// Discards this response's tool calls and asks the model again, with `feedback` as a user
    /// message after its text.
    pub fn retry(&mut self, feedback: impl Into<String>) {
        self.retry = Some(feedback.into());
        self.marks += 1;
    }
    /// The feedback, if a hook asked for a retry.
    pub fn retry_feedback(&self) -> Option<&str> {
        self.retry.as_deref()
    }
}
impl Decides for AfterModel {
    fn decided(&self) -> bool {
        self.retry.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The model streamed a piece of text. Hooks observe it, may rewrite it (only what they let
/// through is recorded and streamed), or abort the stream (the piece is then dropped).
#[derive(Clone, Debug, Serialize)]
pub struct TextDelta {
    /// The piece of text; a hook may change it.
    pub text: String,
    #[serde(skip)]
    abort: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl TextDelta {
    /// A new event.
    pub fn new(text: String) -> Self {
        TextDelta {
            text,
            abort: None,
            marks: 0,
        }
    }
    /// Aborts the stream; the run stops with [`StopReason::Aborted`](crate::StopReason::Aborted)
    /// unless an AfterModel hook asks for a retry.
    pub fn abort(&mut self, reason: impl Into<String>) {
        self.abort = Some(reason.into());
        self.marks += 1;
    }
    /// The abort reason, if a hook aborted.
    pub fn aborted(&self) -> Option<&str> {
        self.abort.as_deref()
    }
}
impl Decides for TextDelta {
    fn decided(&self) -> bool {
        self.abort.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The model streamed a piece of reasoning. Hooks observe it, may rewrite it, or abort the
/// stream, as for [`TextDelta`].
#[derive(Clone, Debug, Serialize)]
pub struct Thinking {
    /// The piece of reasoning.
    pub text: String,
    #[serde(skip)]
    abort: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl Thinking {
    /// A new event.
    pub fn new(text: String) -> Self {
        Thinking {
            text,
            abort: None,
            marks: 0,
        }
    }
    /// Aborts the stream, like [`TextDelta::abort`].
    pub fn abort(&mut self, reason: impl Into<String>) {
        self.abort = Some(reason.into());
        self.marks += 1;
    }
    /// The abort reason, if a hook aborted.
    pub fn aborted(&self) -> Option<&str> {
        self.abort.as_deref()
    }
}
impl Decides for Thinking {
    fn decided(&self) -> bool {
        self.abort.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
