//! The fields every payload carries, as Claude Code's hooks read them (with agentry's own in an
//! `agentry` object), and what a tool declares about itself.

use super::{EventName, Site};
use agentry_core::ToolInfo;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The fields common to every event's payload: its session, transcript, working directory
/// (`cwd`), permission mode and event name; for a sub-agent's run, its id and type; and in
/// `agentry`, the run's id, agent path and step.
pub(crate) fn common_fields(event: EventName, site: &Site<'_>, cwd: &Path) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("session_id".into(), json!(site.session_id));
    m.insert(
        "transcript_path".into(),
        json!(site.transcript.display().to_string()),
    );
    m.insert("cwd".into(), json!(cwd.display().to_string()));
    m.insert("permission_mode".into(), json!("default"));
    m.insert("hook_event_name".into(), json!(event.name()));
    if let Some(ctx) = site.ctx {
        if ctx.parent_run_id().is_some() {
            m.insert("agent_id".into(), json!(ctx.run_id()));
            m.insert("agent_type".into(), json!(ctx.agent_name()));
        }
        m.insert(
            "agentry".into(),
            json!({
                "run_id": ctx.run_id(),
                "agent_path": ctx.agent_path(),
                "step": ctx.step(),
            }),
        );
    }
    m
}

/// Adds what a tool declares about itself (the MCP server that serves it, its annotations with
/// every hint filled in by the MCP specification's defaults, its `outputSchema`) to the
/// payload's `agentry` object, when it declares anything: an extension Claude Code's scripts
/// ignore and agentry-aware ones can read (`.agentry.tool.annotations.destructiveHint`).
pub(super) fn with_tool_info(payload: &mut Map<String, Value>, info: Option<&ToolInfo>) {
    let Some(info) = info else { return };
    let info = ToolInfo {
        annotations: info.annotations.as_ref().map(|a| a.with_defaults()),
        ..info.clone()
    };
    if let Some(Value::Object(agentry)) = payload.get_mut("agentry")
        && let Ok(value) = serde_json::to_value(&info)
    {
        agentry.insert("tool".into(), value);
    }
}
