//! Pieces the benches share.

use agentry::ScriptedTurn;
use agentry::prelude::*;

/// A model that calls `name(args)` in each of `steps` steps of a run, then answers `done`. The
/// position within the run comes from the history (the input plus two messages a step), so one
/// model serves every iteration of a bench.
pub fn tool_steps(steps: u32, name: &'static str, args: Value) -> ScriptedModel {
    ScriptedModel::from_fn(move |_, req| {
        if (req.messages.len() as u32).div_ceil(2) <= steps {
            ScriptedTurn::tool_call(name, args.clone())
        } else {
            ScriptedTurn::text("done")
        }
    })
}

/// A current-thread tokio runtime to drive runs from a bench loop.
pub fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}
