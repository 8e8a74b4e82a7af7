//! The life of a run through the in-process runtime: cancellation (from the handle, a tool or a
//! hook), typed state updates and their sources, and the event stream of a started run.

use agentry::prelude::*;
use agentry::{RunHandle, Tool};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

type Shared<T> = Arc<Mutex<Vec<T>>>;

fn shared<T>() -> Shared<T> {
    Arc::new(Mutex::new(Vec::new()))
}

fn take<T: Clone>(s: &Shared<T>) -> Vec<T> {
    s.lock().unwrap().clone()
}

/// Reads events until one matches `stop_at` (which is kept), failing after [`PATIENCE`].
async fn events_until<S, O>(
    handle: &mut RunHandle<S, O>,
    stop_at: impl Fn(&RunEvent) -> bool,
) -> Vec<RunEvent> {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(PATIENCE, handle.events().next())
            .await
            .expect("no event in time")
            .unwrap_or_else(|| panic!("the stream ended before the awaited event: {seen:#?}"));
        let done = stop_at(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

/// Reads the rest of the stream (it ends when the run does).
/// An agent with one tool whose RunEnd stop reasons go to `ends`.
fn recording_run_ends(
    name: &str,
    model: &ScriptedModel,
    tool: impl Tool,
    ends: &Shared<StopReason>,
) -> Agent {
    let ends = ends.clone();
    Agent::builder(name)
        .model(model.clone())
        .tool(tool)
        .run_end(move |ev, _ctx| {
            ends.lock().unwrap().push(ev.stop().clone());
            async move { Ok(ev) }
        })
        .build()
        .unwrap()
}

async fn rest_of_stream<S, O>(handle: &mut RunHandle<S, O>) -> Vec<RunEvent> {
    tokio::time::timeout(PATIENCE, handle.events().collect::<Vec<_>>())
        .await
        .expect("the event stream did not end")
}

mod cancellation;
mod events;
mod state;
