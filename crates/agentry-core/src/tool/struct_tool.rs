//! Tools that are Rust types: a typed input, a name and a description known at compile time,
//! and settings kept as fields.

use super::{IntoToolOutput, Tool, ToolFailure, ToolInfo, ToolOutput, ToolSpec, schema_of};
use crate::ToolCtx;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::TypeId;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// A tool written as a Rust type, usually a struct holding its settings (a workspace, size caps,
/// whether calls need approval). Every such type is a [`Tool`].
///
/// [`Tool`] is object-safe so that tools of any kind (MCP tools, tools whose schema is only known
/// at run time) live side by side as `Arc<dyn Tool>`, which leaves each implementation to box its
/// future, keep its spec and read its JSON input. [`tool`](super::tool) does that for closures;
/// this trait does it for types. Implement it and the blanket `impl Tool` gives:
///
/// - the spec: [`NAME`](Self::NAME), [`DESCRIPTION`](Self::DESCRIPTION) and the JSON Schema of
///   [`Input`](Self::Input), derived once per type and shared by every instance. The input
///   type's own doc comment is left out of the schema: it is written for Rust readers, and the
///   description already tells the model what the tool does (its fields' doc comments stay);
/// - reading the input: arguments that do not deserialize into `Input` fail the call with a
///   message that names the tool and asks for the fields its schema lists, and
///   [`run`](Self::run) is not called. [`Tool::call_ref`] reads a borrowed input in place,
///   without copying it;
/// - [`needs_approval`](Self::needs_approval), [`timeout`](Self::timeout) and
///   [`info`](Self::info), passed on as they are.
///
/// [`run`](Self::run) may be written as an `async fn`, whose future must be `Send`. It returns
/// its [`Output`](Self::Output), anything [`IntoToolOutput`] (text, a number, `Json(..)`, a
/// [`ToolOutput`]), and fails with `?` on any error or with a message (`Err("...".into())`).
///
/// With both traits in scope, a method they share (`needs_approval`, `timeout`, `info`) called on
/// the type itself must name its trait: `Tool::needs_approval(&t)`.
///
/// ```
/// use agentry_core::{StructTool, Tool, ToolCtx, ToolFailure};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// /// The input of `Add`.
/// #[derive(Deserialize, JsonSchema)]
/// struct AddInput {
///     /// The numbers to add.
///     numbers: Vec<i64>,
/// }
///
/// /// Adds numbers, refusing sums over a limit.
/// struct Add {
///     limit: i64,
///     approval: bool,
/// }
///
/// impl StructTool for Add {
///     type Input = AddInput;
///     type Output = i64;
///     const NAME: &'static str = "add";
///     const DESCRIPTION: &'static str = "Adds numbers.";
///
///     async fn run(&self, input: AddInput, _ctx: ToolCtx) -> Result<i64, ToolFailure> {
///         let sum: i64 = input.numbers.iter().sum();
///         if sum > self.limit {
///             return Err(format!("the sum {sum} is over the limit {}", self.limit).into());
///         }
///         Ok(sum)
///     }
///
///     fn needs_approval(&self) -> bool {
///         self.approval
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let add = Add { limit: 100, approval: false };
/// let spec = add.spec();
/// assert_eq!((spec.name.as_str(), spec.description.as_str()), ("add", "Adds numbers."));
/// assert_eq!(spec.parameters["required"], json!(["numbers"]));
/// assert!(spec.parameters.get("description").is_none()); // the input's doc comment
/// assert!(!Tool::needs_approval(&add));
/// # let ctx = ToolCtx::detached(agentry_core::RunContextSpec::new("run", "a"), "add");
///
/// // What the model gets back.
/// let out = add.call(json!({"numbers": [1, 2, 3]}), ctx.clone()).await.unwrap();
/// assert_eq!(out.content, "6");
/// let too_much = add.call(json!({"numbers": [99, 2]}), ctx.clone()).await.unwrap_err();
/// assert_eq!(too_much.message(), "the sum 101 is over the limit 100");
/// let bad = add.call(json!({"number": 1}), ctx).await.unwrap_err();
/// assert!(bad.message().starts_with("the input of `add` is invalid: missing field `numbers`"));
/// # }
/// ```
pub trait StructTool: Send + Sync + 'static {
    /// What a call takes: the model sees its JSON Schema, and the arguments are deserialized
    /// into it before [`run`](Self::run).
    type Input: DeserializeOwned + JsonSchema + Send;

    /// What a call returns on success: text, a number, `Json(..)`, a [`ToolOutput`], anything
    /// [`IntoToolOutput`].
    type Output: IntoToolOutput;

    /// The name the model calls the tool by.
    const NAME: &'static str;

    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;

    /// Runs one call with its input read.
    fn run(
        &self,
        input: Self::Input,
        ctx: ToolCtx,
    ) -> impl Future<Output = Result<Self::Output, ToolFailure>> + Send;

    /// True when every call needs a person's approval before it runs (see
    /// [`Tool::needs_approval`]). Default false.
    fn needs_approval(&self) -> bool {
        false
    }

    /// How long one call may take (see [`Tool::timeout`]); `None` (the default) leaves it to the
    /// runtime's default tool timeout.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// What the tool declares about itself besides its spec (see [`Tool::info`]); `None` by
    /// default.
    fn info(&self) -> Option<&Arc<ToolInfo>> {
        None
    }
}

impl<T: StructTool> Tool for T {
    fn spec(&self) -> &ToolSpec {
        spec_of::<T>()
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        start(self, serde_json::from_value(input), ctx)
    }

    fn call_ref<'a>(
        &'a self,
        input: &Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        start(self, T::Input::deserialize(input), ctx)
    }

    fn needs_approval(&self) -> bool {
        StructTool::needs_approval(self)
    }

    fn timeout(&self) -> Option<Duration> {
        StructTool::timeout(self)
    }

    fn info(&self) -> Option<&Arc<ToolInfo>> {
        StructTool::info(self)
    }
}

/// The call of `tool` on `input` as read: a failure naming the tool when it could not be read.
fn start<T: StructTool>(
    tool: &T,
    input: Result<T::Input, serde_json::Error>,
    ctx: ToolCtx,
) -> BoxFuture<'_, Result<ToolOutput, ToolFailure>> {
    match input {
        Ok(input) => Box::pin(async move { tool.run(input, ctx).await?.into_tool_output() }),
        Err(e) => Box::pin(std::future::ready(Err(ToolFailure::new(format!(
            "the input of `{}` is invalid: {e}; send the fields its schema lists",
            T::NAME
        ))))),
    }
}

/// The spec of `T`, made on the first call for `T` and kept for the rest of the process.
fn spec_of<T: StructTool>() -> &'static ToolSpec {
    static SPECS: OnceLock<RwLock<HashMap<TypeId, &'static ToolSpec>>> = OnceLock::new();
    let specs = SPECS.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    if let Some(spec) = specs.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return spec;
    }
    // Made outside the lock: deriving a schema may take a while, and may panic.
    let made = make_spec::<T>();
    let mut specs = specs.write().unwrap_or_else(|e| e.into_inner());
    specs.entry(id).or_insert_with(|| Box::leak(Box::new(made)))
}

/// The spec of `T`: its name, its description, and its input's schema without the input type's
/// own description.
fn make_spec<T: StructTool>() -> ToolSpec {
    let mut parameters = schema_of::<T::Input>();
    if let Some(map) = parameters.as_object_mut() {
        map.remove("description");
    }
    ToolSpec {
        name: T::NAME.to_string(),
        description: T::DESCRIPTION.to_string(),
        parameters,
    }
}
