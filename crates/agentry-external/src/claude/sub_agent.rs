//! SubagentStart: a sub-agent about to run, as Claude Code's hooks see it; context joins its
//! input. (SubagentStop is a sub-agent run's Stop.)

use super::fields::SUB_AGENT;
use super::{EventName, with};
use crate::hooks::Engine;
use agentry_core::hooks::{BeforeSubAgent, HookCtx, HookResult};

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
        let fields = self.claude_fields(&ev, &SUB_AGENT);
        let merged = self
            .fire(EventName::SubagentStart, Some(ev.agent()), &site, |m| {
                m.extend(fields)
            })
            .await?;
        if let Some(reminder) = merged.reminder(EventName::SubagentStart) {
            ev.input = with(&ev.input, &reminder);
        }
        Ok(ev)
    }
}
