//! Tools: the `Tool` trait, tool specs, outputs and failures, typed tools from closures
//! ([`tool`]) and tools that are Rust types ([`StructTool`]).

mod info;
mod source;
mod struct_tool;
mod typed;

pub use info::{ToolAnnotations, ToolInfo};
pub use source::{StoredToolSource, TOOL_SOURCE_WARNING, ToolSet, ToolSource};
pub use struct_tool::StructTool;
pub use typed::{TypedTool, schema_of, tool};

use crate::ToolCtx;
use crate::content::{Content, Part};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// What the model is told about a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// A tool the model can call.
///
/// Most tools are made with [`tool`] from an async closure with a typed input, or are types that
/// implement [`StructTool`] (a typed input, a name and a description, settings as fields), which
/// makes them tools. Implement this trait directly for tools whose schema is only known at run
/// time.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, description and argument schema.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool. `input` has already been validated against the spec's schema.
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>>;

    /// Runs the tool on a borrowed input. The runtime calls this when hooks still need the input
    /// after the call (AfterTool, ToolFailed), so the input need not be copied for them. The
    /// default clones it and calls [`call`](Self::call); typed tools read it in place.
    fn call_ref<'a>(
        &'a self,
        input: &Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        self.call(input.clone(), ctx)
    }

    /// True when every call needs a person's approval before it runs: the run pauses with the
    /// call pending (see `StopReason::AwaitingApproval`). Default false; typed tools set it
    /// with `TypedTool::needs_approval`, struct tools with [`StructTool::needs_approval`].
    fn needs_approval(&self) -> bool {
        false
    }

    /// How long one call may take; `None` (the default) leaves it to the runtime's default tool
    /// timeout. A call that overruns its limit is dropped, and the model gets an error result
    /// that names the limit (after ToolFailed hooks, which may recover).
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// What the tool declares about itself besides its spec (its source, its annotations);
    /// `None` (the default) for most tools. The runtime puts it on the call's BeforeTool,
    /// AfterTool and ToolFailed events, where hooks (the tool policy) read it.
    fn info(&self) -> Option<&std::sync::Arc<ToolInfo>> {
        None
    }
}

/// What a tool returns on success: the content the model sees (text, or parts: a tool may
/// return an image or a document).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    /// The content the model sees.
    pub content: Content,
}

impl ToolOutput {
    /// Output from text.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: Content::from(content.into()),
        }
    }

    /// Output from parts: `ToolOutput::parts([Part::text("the chart:"), Part::image(png, "image/png")])`.
    pub fn parts(content: impl Into<Content>) -> Self {
        ToolOutput {
            content: content.into(),
        }
    }

    /// Output from any serializable value, as JSON text.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, ToolFailure> {
        serde_json::to_string(value)
            .map(ToolOutput::text)
            .map_err(|e| ToolFailure::new(format!("could not serialize the tool output: {e}")))
    }
}

/// Conversion of a tool's return value into [`ToolOutput`].
pub trait IntoToolOutput {
    /// Converts.
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(self)
    }
}
impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(self))
    }
}
impl IntoToolOutput for &str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(self))
    }
}
impl IntoToolOutput for Content {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::parts(self))
    }
}
impl IntoToolOutput for Part {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::parts(self))
    }
}
impl IntoToolOutput for Vec<Part> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::parts(self))
    }
}
impl IntoToolOutput for Value {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        Ok(match self {
            Value::String(s) => ToolOutput::text(s),
            other => ToolOutput::text(other.to_string()),
        })
    }
}

/// Numbers and booleans are their text.
macro_rules! plain_outputs {
    ($($t:ty),*) => {$(
        impl IntoToolOutput for $t {
            fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
                Ok(ToolOutput::text(self.to_string()))
            }
        }
    )*};
}
plain_outputs!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool
);

/// Wraps any serializable value as a tool's JSON output.
#[derive(Clone, Debug)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolFailure> {
        ToolOutput::json(&self.0)
    }
}

/// A tool's failure. The model sees its message as an error result (unless a ToolFailed hook
/// recovers), and the run goes on.
///
/// Any `std::error::Error` converts into it, so `?` works inside tools, and so do `&str` and
/// `String`: `return Err("the city is unknown".into())`. [`ToolFailure::new`] says the same.
pub struct ToolFailure {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    hook: Option<crate::hooks::HookError>,
}

impl ToolFailure {
    /// A failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            source: None,
            hook: None,
        }
    }
    /// A failure of around-tool middleware: it fails the run like any failing hook.
    pub fn hook(error: crate::hooks::HookError) -> Self {
        ToolFailure {
            message: error.to_string(),
            source: None,
            hook: Some(error),
        }
    }
    /// The hook failure this carries, when around-tool middleware failed.
    pub fn hook_error(&self) -> Option<&crate::hooks::HookError> {
        self.hook.as_ref()
    }
    /// The message the model will see.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The underlying error, if any.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolFailure")
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

/// Any error converts into a failure, and so does a message: `?` works inside tools, and so does
/// `return Err("the city is unknown".into())` (or a `String`, e.g. from `format!`).
impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for ToolFailure {
    fn from(e: E) -> Self {
        let source = e.into();
        ToolFailure {
            message: source.to_string(),
            source: Some(source),
            hook: None,
        }
    }
}
