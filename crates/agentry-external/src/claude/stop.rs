//! Stop and SubagentStop: a run about to stop, as Claude Code's hooks see it; a block (or
//! context) vetoes a natural stop, at most [`STOP_BLOCK_CAP`] times in a row.

use super::fields::STOP;
use super::{EventName, with};
use crate::hooks::Engine;
use agentry_core::StopReason;
use agentry_core::hooks::{HookCtx, HookResult, Stop};
use serde_json::{Value, json};

/// After this many consecutive blocked stops, a run stops anyway (as Claude Code does).
const STOP_BLOCK_CAP: u32 = 8;

/// True when a run stopping for `reason` is an agent that finished responding, which is when
/// Claude Code fires Stop: a final answer, or a limit or hook that ended the turn. A run that
/// pauses for approval goes on afterwards (Claude Code asks within the turn); a cancellation,
/// a person's stop and a failure are interruptions, which fire no Stop.
fn finished_responding(reason: &StopReason) -> bool {
    !matches!(
        reason,
        StopReason::Cancelled
            | StopReason::AwaitingApproval { .. }
            | StopReason::StoppedByHuman { .. }
            | StopReason::Recovered { .. }
    )
}

impl Engine {
    /// Stop for a top-level run, SubagentStop for a sub-agent's, when the agent finished
    /// responding ([`finished_responding`]), as in Claude Code.
    pub(crate) async fn stop_hooks(&self, mut ev: Stop, ctx: &HookCtx) -> HookResult<Stop> {
        let event = if ctx.parent_run_id().is_some() {
            EventName::SubagentStop
        } else {
            EventName::Stop
        };
        if !self.has(event) || !finished_responding(ev.reason()) {
            return Ok(ev);
        }
        let site = self.claude.site(ctx);
        let run_id = ctx.run_id().to_string();
        let (active, remembered) = self
            .claude
            .memo(&run_id, |m| (m.stop_blocks > 0, m.last_assistant.clone()));
        let mut fields = self.claude_fields(&ev, &STOP);
        // The final answer as text (a structured one as its JSON); without one, the last
        // assistant message the run remembers.
        let last = match fields.remove("last_assistant_message") {
            Some(Value::String(s)) => Some(s),
            Some(Value::Null) | None => remembered,
            Some(other) => Some(other.to_string()),
        };
        fields.insert("last_assistant_message".into(), json!(last));
        let agent_transcript = (event == EventName::SubagentStop)
            .then(|| self.claude.agent_transcript_path(&site.session_id, &run_id));
        let agent = ctx.agent_name().to_string();
        let merged = self
            .fire(event, Some(&agent), &site, |m| {
                m.insert("stop_hook_active".into(), json!(active));
                m.extend(fields);
                if let Some(path) = agent_transcript {
                    m.insert(
                        "agent_transcript_path".into(),
                        json!(path.display().to_string()),
                    );
                }
            })
            .await?;
        let reminder = merged.reminder(event);
        let feedback = match (merged.block, reminder) {
            (Some(reason), Some(context)) => Some(with(&reason, &context)),
            (Some(reason), None) => Some(reason),
            (None, context) => context,
        };
        let blocks = self.claude.memo(&run_id, |m| {
            if feedback.is_some() && ev.reason().is_natural() {
                m.stop_blocks += 1;
            } else {
                m.stop_blocks = 0;
            }
            m.stop_blocks
        });
        if let Some(feedback) = feedback
            && ev.reason().is_natural()
            && blocks <= STOP_BLOCK_CAP
        {
            ev.veto(feedback);
        }
        Ok(ev)
    }
}
