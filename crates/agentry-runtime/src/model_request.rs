//! What a model call is sent, as the run's `model_request` event reports it: the messages by
//! number; the system prompt, tools and parameters at the run's first call and wherever
//! BeforeModel hooks made them differ from the agent's own.

use super::scope::Scope;
use agentry_core::hooks::Events;
use agentry_core::{AgentDef, History, ModelRequest, RunEvent, ToolSpec};
use std::sync::Arc;

/// Reports `request` (as BeforeModel hooks left it) on the run's event stream, when it has
/// one. `first` is the run's first call; `def` the agent, whose own system prompt, tools and
/// parameters need no repeating; `history` the run's own, to tell whether hooks changed the
/// messages. It keeps nothing between calls, so every runtime reports a run the same way.
pub(crate) fn report(
    scope: &Scope,
    def: &AgentDef,
    request: &ModelRequest,
    history: &History,
    first: bool,
) {
    if !scope.engine.has_event_stream() {
        return;
    }
    let system = match (&request.system, &def.instructions) {
        (now, own) if !first && same_text(now, own) => None,
        (Some(now), _) => Some(now.clone()),
        (None, None) => None,
        // A hook removed the system prompt.
        (None, Some(_)) => Some(Arc::from("")),
    };
    let tools = (first || !same_tools(&request.tools, &def.specs))
        .then(|| request.tools.iter().map(|t| t.name.clone()).collect());
    let params = (first || request.params != def.params).then(|| request.params.clone());
    // Only hooks change what is sent: without BeforeModel hooks it is the history.
    let messages_rewritten = scope.wants(Events::BEFORE_MODEL)
        && (request.messages.len() != history.len()
            || request
                .messages
                .iter_shared()
                .zip(history.iter_shared())
                .any(|(a, b)| !Arc::ptr_eq(a, b)));
    let messages = request.messages.len();
    scope.engine.send_event(|p| RunEvent::ModelRequest {
        messages,
        messages_rewritten,
        system,
        tools,
        params,
        agent_path: p.clone(),
        run_id: None,
    });
}

fn same_text(a: &Option<Arc<str>>, b: &Option<Arc<str>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
        (None, None) => true,
        _ => false,
    }
}

fn same_tools(a: &Arc<[ToolSpec]>, b: &Arc<[ToolSpec]>) -> bool {
    Arc::ptr_eq(a, b)
        || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| a.name == b.name))
}
