//! What the handlers of one event decided together: their answers merged, most restrictive
//! first.

use super::reply::{Permission, PermissionReply, Verdict};
use crate::claude::EventName;
use serde_json::Value;

/// What the matching commands decided together.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// The most restrictive permission decision, with the reasons given at that level.
    pub(crate) permission: Option<(Permission, Option<String>)>,
    /// Blocks, their reasons joined.
    pub(crate) block: Option<String>,
    /// The last `updatedInput` to arrive.
    pub(crate) updated_input: Option<Value>,
    /// Every command's context for the model.
    pub(crate) context: Vec<String>,
    /// The last replacement output to arrive.
    pub(crate) updated_output: Option<Value>,
    /// A permission request's decision: a deny wins.
    pub(crate) permission_request: Option<PermissionReply>,
}

impl Merged {
    /// Adds `reason` to the reasons in `slot`, once.
    fn join(slot: &mut Option<String>, reason: String) {
        match slot {
            Some(existing) if !reason.is_empty() && *existing != reason => {
                existing.push('\n');
                existing.push_str(&reason);
            }
            Some(_) => {}
            None => *slot = Some(reason),
        }
    }

    /// Adds one handler's answer.
    pub(super) fn take(&mut self, v: Verdict) {
        if let Some((p, reason)) = v.permission {
            match &mut self.permission {
                Some((have, reasons)) if *have == p => {
                    if let Some(r) = reason {
                        Merged::join(reasons, r);
                    }
                }
                Some((have, _)) if *have > p => {}
                _ => self.permission = Some((p, reason)),
            }
        }
        if let Some(reason) = v.block {
            Merged::join(&mut self.block, reason);
        }
        if v.updated_input.is_some() {
            self.updated_input = v.updated_input;
        }
        if let Some(c) = v.context {
            self.context.push(c);
        }
        if v.updated_output.is_some() {
            self.updated_output = v.updated_output;
        }
        if let Some(pr) = v.permission_request {
            match &self.permission_request {
                Some(have) if !have.allow => {}
                _ => self.permission_request = Some(pr),
            }
        }
    }

    /// The context for the model, as Claude Code gives it: a system reminder.
    pub(crate) fn reminder(&self, event: EventName) -> Option<String> {
        if self.context.is_empty() {
            return None;
        }
        Some(format!(
            "<system-reminder>\n{event} hook additional context: {}\n</system-reminder>",
            self.context.join("\n")
        ))
    }
}
