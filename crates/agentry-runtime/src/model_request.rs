//! What a model call is sent, as the run's `model_request` event reports it: the messages by
//! number; the system prompt, tools and parameters at the run's first call and wherever
//! BeforeModel hooks changed them.

use super::scope::Scope;
use agentry_core::{ModelRequest, RunEvent};
use std::sync::Arc;

/// Reports `request` (as BeforeModel hooks left it) on the run's event stream. `before` is the
/// request as the agent made it, when BeforeModel hooks ran on it (`None`: nothing changed it);
/// `first` is the run's first call. It keeps nothing between calls, so every runtime reports a
/// run the same way. The caller checks that the run has an event stream.
pub(crate) fn report(
    scope: &Scope,
    request: &ModelRequest,
    before: Option<&ModelRequest>,
    first: bool,
) {
    let changed = before.map_or_else(Vec::new, |before| request.changed_from(before));
    let shown = |part: &str| first || changed.contains(&part);
    let system = match &request.system {
        Some(system) if shown("system") => Some(system.clone()),
        // A system prompt a hook removed is reported as "".
        None if changed.contains(&"system") => Some(Arc::from("")),
        _ => None,
    };
    let tools = shown("tools").then(|| request.tools.iter().map(|t| t.name.clone()).collect());
    let params = shown("params").then(|| request.params.clone());
    let messages_rewritten = changed.contains(&"messages");
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
