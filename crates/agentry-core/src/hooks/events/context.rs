//! The payloads of the `context` event group: BeforeCompact, AfterCompact, CompactFailed.

use super::{Decides, form};
use crate::compaction::{CompactPlan, OnCompactError};
use crate::{History, ModelError};
use serde::Serialize;

/// The history is about to be compacted. A hook may veto this compaction (the step goes on with
/// the history as it is) or change the plan: fold more or fewer messages, or switch strategy.
/// A changed plan is moved onto safe boundaries (see [`CompactPlan::aligned`]).
#[derive(Clone, Debug, Serialize)]
pub struct BeforeCompact {
    /// The prompt's size, in tokens, as counted.
    tokens: usize,
    /// The threshold it passed.
    threshold: usize,
    /// The history as it stands (shared, not copied).
    #[serde(serialize_with = "form::count")]
    messages: History,
    /// What will be folded, and how.
    #[serde(skip)]
    pub plan: CompactPlan,
    /// True when the compaction was asked for (Claude Code's `manual` trigger:
    /// [`RunOptions::compact_first`](crate::RunOptions::compact_first)), false when the prompt
    /// passed the threshold (`auto`).
    pub manual: bool,
    #[serde(skip)]
    veto: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl BeforeCompact {
    /// The prompt's size, in tokens, as counted.
    pub fn tokens(&self) -> usize {
        self.tokens
    }
    /// The threshold it passed.
    pub fn threshold(&self) -> usize {
        self.threshold
    }
    /// The history as it stands (shared, not copied).
    pub fn messages(&self) -> &History {
        &self.messages
    }
}
impl BeforeCompact {
    /// A new event.
    pub fn new(tokens: usize, threshold: usize, messages: History, plan: CompactPlan) -> Self {
        BeforeCompact {
            tokens,
            threshold,
            messages,
            plan,
            manual: false,
            veto: None,
            marks: 0,
        }
    }
    /// Skips this compaction; the reason is logged.
    pub fn veto(&mut self, reason: impl Into<String>) {
        self.veto = Some(reason.into());
        self.marks += 1;
    }
    /// The veto's reason, if a hook vetoed.
    pub fn vetoed(&self) -> Option<&str> {
        self.veto.as_deref()
    }
}
impl Decides for BeforeCompact {
    fn decided(&self) -> bool {
        self.veto.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}

/// The history was compacted: the folded messages are about to be replaced by one user message
/// with `summary`. A hook may rewrite the summary.
#[derive(Clone, Debug, Serialize)]
pub struct AfterCompact {
    /// What was folded, and how.
    #[serde(skip)]
    plan: CompactPlan,
    /// The prompt's size before, in tokens.
    tokens_before: usize,
    /// The text that replaces the folded messages (the heading and the model's summary, or the
    /// window's note).
    pub summary: String,
    /// True when the compaction was asked for (`manual`), false when the prompt passed the
    /// threshold (`auto`); see [`BeforeCompact::manual`].
    pub manual: bool,
}
impl AfterCompact {
    /// What was folded, and how.
    pub fn plan(&self) -> CompactPlan {
        self.plan
    }
    /// The prompt's size before, in tokens.
    pub fn tokens_before(&self) -> usize {
        self.tokens_before
    }
}
impl AfterCompact {
    /// A new event.
    pub fn new(plan: CompactPlan, tokens_before: usize, summary: String) -> Self {
        AfterCompact {
            plan,
            tokens_before,
            summary,
            manual: false,
        }
    }
}
impl Decides for AfterCompact {}

/// The summarising call failed. A hook may supply the summary itself, or change what the run
/// does next (`policy`: go on uncompacted, or fail).
#[derive(Clone, Debug, Serialize)]
pub struct CompactFailed {
    /// The failure.
    #[serde(serialize_with = "form::message")]
    error: ModelError,
    /// What was to be folded.
    #[serde(skip)]
    plan: CompactPlan,
    /// What happens next unless a hook recovers: the compaction's configured policy.
    #[serde(skip)]
    pub policy: OnCompactError,
    #[serde(skip)]
    recovery: Option<String>,
    #[serde(skip)]
    marks: u32,
}
impl CompactFailed {
    /// The failure.
    pub fn error(&self) -> &ModelError {
        &self.error
    }
    /// What was to be folded.
    pub fn plan(&self) -> CompactPlan {
        self.plan
    }
}
impl CompactFailed {
    /// A new event.
    pub fn new(error: ModelError, plan: CompactPlan, policy: OnCompactError) -> Self {
        CompactFailed {
            error,
            plan,
            policy,
            recovery: None,
            marks: 0,
        }
    }
    /// Compacts with this summary instead.
    pub fn recover(&mut self, summary: impl Into<String>) {
        self.recovery = Some(summary.into());
        self.marks += 1;
    }
    /// The summary a hook supplied, if any.
    pub fn recovery(&self) -> Option<&str> {
        self.recovery.as_deref()
    }
}
impl Decides for CompactFailed {
    fn decided(&self) -> bool {
        self.recovery.is_some()
    }
    fn marks(&self) -> u32 {
        self.marks
    }
}
