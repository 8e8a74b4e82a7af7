//! Typed run state, stored type-erased so the engine stays generic-free.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::any::Any;

/// Bound for a run's state type: serde both ways, cloneable, shareable.
///
/// Implemented for every type that meets the bounds; `()` is the state of agents that keep none.
pub trait AgentState: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {}
impl<T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static> AgentState for T {}

/// A run's state with its type erased: the engine serializes, clones and restores it without
/// knowing `S`; typed access downcasts.
pub trait ErasedState: Send + Sync {
    /// The state as a `dyn Any`, for typed reads.
    fn as_any(&self) -> &dyn Any;
    /// The state as a mutable `dyn Any`, for typed updates.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Consumes the box, for handing the final state back typed.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// The state as JSON.
    fn to_json(&self) -> Result<Value, StateError>;
    /// A new state of the same type, read from `value`.
    fn parse_json(&self, value: Value) -> Result<Box<dyn ErasedState>, StateError>;
    /// A deep copy.
    fn clone_box(&self) -> Box<dyn ErasedState>;
    /// The Rust type name of the state.
    fn type_name(&self) -> &'static str;
}

impl<S: AgentState> ErasedState for S {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn to_json(&self) -> Result<Value, StateError> {
        serde_json::to_value(self).map_err(|e| StateError::Serde {
            type_name: std::any::type_name::<S>(),
            message: e.to_string(),
        })
    }
    fn parse_json(&self, value: Value) -> Result<Box<dyn ErasedState>, StateError> {
        serde_json::from_value::<S>(value)
            .map(|s| Box::new(s) as Box<dyn ErasedState>)
            .map_err(|e| StateError::Serde {
                type_name: std::any::type_name::<S>(),
                message: e.to_string(),
            })
    }
    fn clone_box(&self) -> Box<dyn ErasedState> {
        Box::new(self.clone())
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<S>()
    }
}

/// Who changed the state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum StateSource {
    /// A tool, by name.
    Tool(String),
    /// A hook, by name.
    Hook(String),
    /// The runtime itself (for example a restore from a snapshot).
    System,
}

/// A state access that could not be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The caller asked for a type other than the agent's state type.
    #[error(
        "state type mismatch: asked for `{asked}` but this run's state is `{actual}`; use the type given to `Agent::builder(..).state(..)`"
    )]
    TypeMismatch {
        /// The type the caller asked for.
        asked: &'static str,
        /// The run's state type.
        actual: &'static str,
    },
    /// The state could not be converted to or from JSON.
    #[error("state `{type_name}` could not be converted to or from JSON: {message}")]
    Serde {
        /// The state type.
        type_name: &'static str,
        /// The serde error.
        message: String,
    },
}
