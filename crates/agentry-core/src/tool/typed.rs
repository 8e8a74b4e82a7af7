//! Typed tools from async closures: the input type derives its JSON Schema.

use super::{IntoToolOutput, Tool, ToolFailure, ToolOutput, ToolSpec};
use crate::ToolCtx;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

/// A tool made from an async closure over a typed input. See [`tool`].
pub struct TypedTool<A, F> {
    spec: ToolSpec,
    f: F,
    needs_approval: bool,
    timeout: Option<Duration>,
    _input: PhantomData<fn(A)>,
}

/// Makes a tool from an async closure whose input type derives `Deserialize` and `JsonSchema`.
///
/// The schema the model sees is derived from `A`; arguments are validated against it before the
/// closure runs, and a mismatch goes back to the model as an error result.
///
/// ```
/// use agentry_core::{tool, Tool, ToolCtx};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct City { city: String }
///
/// let weather = tool("get_weather", "Current weather for a city", |a: City, _ctx: ToolCtx| async move {
///     Ok(format!("Sunny in {}", a.city))
/// });
/// assert_eq!(weather.spec().name, "get_weather");
/// assert_eq!(weather.spec().parameters["required"][0], "city");
/// ```
pub fn tool<A, F, Fut, R>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> TypedTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolFailure>> + Send + 'static,
    R: IntoToolOutput,
{
    TypedTool {
        spec: ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: schema_of::<A>(),
        },
        f,
        needs_approval: false,
        timeout: None,
        _input: PhantomData,
    }
}

impl<A, F> TypedTool<A, F> {
    /// Every call of this tool waits for a person's approval: the run pauses with the call
    /// pending, and goes on once it is decided.
    pub fn needs_approval(mut self) -> Self {
        self.needs_approval = true;
        self
    }

    /// How long a call of this tool may take (instead of the runtime's default tool timeout,
    /// `Runtime::tool_timeout`). A call that overruns it is dropped and the model gets an error
    /// result naming this limit (after ToolFailed hooks, which may recover).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }
}

/// The JSON Schema of `A`, as a tool's parameters: an object schema without the `$schema` and
/// `title` keys providers do not want.
pub fn schema_of<A: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.remove("$schema");
        map.remove("title");
    }
    v
}

impl<A, F, Fut, R> Tool for TypedTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolFailure>> + Send + 'static,
    R: IntoToolOutput,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn needs_approval(&self) -> bool {
        self.needs_approval
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        self.run(serde_json::from_value::<A>(input), ctx)
    }

    fn call_ref<'a>(
        &'a self,
        input: &Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        self.run(A::deserialize(input), ctx)
    }
}

impl<A, F, Fut, R> TypedTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolFailure>> + Send + 'static,
    R: IntoToolOutput,
{
    fn run<'a>(
        &'a self,
        args: Result<A, serde_json::Error>,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        let args = match args {
            Ok(a) => a,
            Err(e) => {
                let msg = format!(
                    "the arguments of `{}` do not match its input type: {e}; send arguments that match the tool's schema",
                    self.spec.name
                );
                return Box::pin(async move { Err(ToolFailure::new(msg)) });
            }
        };
        let fut = (self.f)(args, ctx);
        Box::pin(async move { fut.await?.into_tool_output() })
    }
}
