//! What hooks can decide: block, mock, rewrite, skip, stop, veto, answer, retry, recover, abort,
//! and around middleware that caches, times and retries.

use crate::common::*;
use agentry::ToolResult;
use agentry::prelude::*;

fn weather_agent(
    model: &ScriptedModel,
    log: &Log,
    calls: &Counter,
) -> agentry::AgentBuilder<(), String> {
    Agent::builder("planner")
        .model(model.clone())
        .tool(weather(log, calls))
}

fn paris_then(answer: &str) -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .text(answer)
}

/// The tool result the model received in its request number `n` (0-based): the last message.
fn result_sent(model: &ScriptedModel, n: usize) -> ToolResult {
    model.requests()[n]
        .messages
        .last()
        .and_then(|m| m.tool_result().cloned())
        .expect("the last message of the request is a tool result")
}

mod model;
mod steps;
mod tools;
/// A tool input with no fields.
#[derive(Deserialize, JsonSchema)]
struct Empty {}

mod middleware;
