//! What every tool does around its own work: read its input, describe itself, run blocking
//! file work off the async runtime.

use crate::Error;
use agentry_core::{ToolFailure, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Set when the call that started a piece of blocking work is dropped (cancelled, timed
/// out): long searches check it and stop, instead of running on unseen.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cancelled(Arc<AtomicBool>);

impl Cancelled {
    /// True once the call was dropped.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets [`Cancelled`] when dropped.
struct SetOnDrop(Cancelled);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// Runs blocking file work on tokio's blocking pool. The work is told, through [`Cancelled`],
/// when the call is dropped.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolFailure>
where
    T: Send + 'static,
    F: FnOnce(Cancelled) -> Result<T, Error> + Send + 'static,
{
    let cancelled = Cancelled::default();
    let _guard = SetOnDrop(cancelled.clone());
    match tokio::task::spawn_blocking(move || work(cancelled)).await {
        Ok(result) => result.map_err(ToolFailure::from),
        Err(e) => Err(ToolFailure::new(format!("the tool's work failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_dropped_call_tells_its_blocking_work_to_stop() {
        let (tx, rx) = std::sync::mpsc::channel();
        let call = blocking(move |cancelled: Cancelled| {
            while !cancelled.is_set() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = tx.send(());
            Ok(())
        });
        // The call overruns a limit and is dropped, as the runtime's tool timeout does.
        assert!(
            tokio::time::timeout(Duration::from_millis(50), call)
                .await
                .is_err()
        );
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the work saw the cancellation");
    }
}
