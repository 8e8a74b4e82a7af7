//! SubagentStart: a sub-agent about to run, as Claude Code's hooks see it; context joins its
//! input. (SubagentStop is a sub-agent run's Stop.)

use super::{EventName, with};
use crate::hooks::Engine;
use agentry_core::hooks::{BeforeSubAgent, HookCtx, HookResult};
use serde_json::json;

impl Engine {
    /// SubagentStart, matched against the sub-agent's name.
    pub(crate) async fn subagent_start(
        &self,
        mut ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> HookResult<BeforeSubAgent> {
        if !self.has(EventName::SubagentStart) {
            return Ok(ev);
        }
        let site = self.claude.site(ctx);
        let (agent, call_id) = (ev.agent().to_string(), ev.call_id().to_string());
        let merged = self
            .fire(EventName::SubagentStart, Some(&agent), &site, |m| {
                m.insert("agent_id".into(), json!(call_id));
                m.insert("agent_type".into(), json!(agent));
            })
            .await?;
        if let Some(reminder) = merged.reminder(EventName::SubagentStart) {
            ev.input = with(&ev.input, &reminder);
        }
        Ok(ev)
    }
}
