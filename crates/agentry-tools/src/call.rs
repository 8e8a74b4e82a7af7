//! What every tool does around its own work: read its input, describe itself, run blocking
//! file work off the async runtime.

use crate::Error;
use agentry_core::{ToolFailure, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads a tool's input into its typed form; a mismatch is a failure the model can correct.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolFailure> {
    serde_json::from_value(input).map_err(|e| {
        ToolFailure::new(format!(
            "the input of `{tool}` is invalid: {e}; send the fields its schema lists"
        ))
    })
}

/// A tool's spec, its parameters the schema of `T`.
/// The input type's own doc comment is left out: it is written for Rust readers, and the
/// tool's description already tells the model what the tool does.
pub(crate) fn spec<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    let mut parameters = agentry_core::tool::schema_of::<T>();
    if let Some(map) = parameters.as_object_mut() {
        map.remove("description");
    }
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}

/// Runs blocking file work on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolFailure>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ToolFailure::from),
        Err(e) => Err(ToolFailure::new(format!("the tool's work failed: {e}"))),
    }
}
