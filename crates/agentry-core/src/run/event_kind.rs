//! The names of hook events, and sets of them.

use std::fmt;

/// Every hook event agentry defines, including those whose payloads later layers add
/// (the `human` and `context` groups).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub enum EventKind {
    /// A run starts.
    RunStart,
    /// A run ends.
    RunEnd,
    /// A run fails.
    #[serde(alias = "RunError")]
    RunFailed,
    /// A step is about to start.
    BeforeStep,
    /// A step ended.
    AfterStep,
    /// The run is about to stop.
    Stop,
    /// A model call is about to be made.
    BeforeModel,
    /// A model call returned.
    AfterModel,
    /// The model streamed text.
    TextDelta,
    /// The model streamed reasoning.
    Thinking,
    /// A tool call is about to run.
    BeforeTool,
    /// A tool call returned.
    AfterTool,
    /// A tool call failed.
    #[serde(alias = "ToolError")]
    ToolFailed,
    /// A sub-agent is about to run.
    BeforeSubAgent,
    /// A sub-agent returned.
    AfterSubAgent,
    /// A sub-agent failed.
    #[serde(alias = "SubAgentError")]
    SubAgentFailed,
    /// A person was asked to approve a call (human group).
    ApprovalRequested,
    /// An approval was decided (human group).
    ApprovalResolved,
    /// A person stopped the run (human group).
    StoppedByHuman,
    /// Context compaction is about to happen (context group).
    BeforeCompact,
    /// Context compaction happened (context group).
    AfterCompact,
    /// Context compaction failed (context group).
    #[serde(alias = "CompactError")]
    CompactFailed,
    /// The state changed.
    StateChange,
    /// A message was added to the history.
    MessageAdded,
    /// A tool or hook emitted a custom event.
    Custom,
    /// A hook is about to run.
    HookStarted,
    /// A hook finished.
    HookFinished,
    /// A hook failed.
    HookFailed,
    /// Around-model middleware.
    AroundModel,
    /// Around-tool middleware.
    AroundTool,
    /// The tool calls of one model turn are about to run.
    BeforeToolBatch,
    /// The tool calls of one model turn all have their results.
    AfterToolBatch,
}

impl EventKind {
    /// The event's name, as external hooks and logs spell it.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::RunStart => "RunStart",
            EventKind::RunEnd => "RunEnd",
            EventKind::RunFailed => "RunFailed",
            EventKind::BeforeStep => "BeforeStep",
            EventKind::AfterStep => "AfterStep",
            EventKind::Stop => "Stop",
            EventKind::BeforeModel => "BeforeModel",
            EventKind::AfterModel => "AfterModel",
            EventKind::TextDelta => "TextDelta",
            EventKind::Thinking => "Thinking",
            EventKind::BeforeTool => "BeforeTool",
            EventKind::AfterTool => "AfterTool",
            EventKind::ToolFailed => "ToolFailed",
            EventKind::BeforeSubAgent => "BeforeSubAgent",
            EventKind::AfterSubAgent => "AfterSubAgent",
            EventKind::SubAgentFailed => "SubAgentFailed",
            EventKind::ApprovalRequested => "ApprovalRequested",
            EventKind::ApprovalResolved => "ApprovalResolved",
            EventKind::StoppedByHuman => "StoppedByHuman",
            EventKind::BeforeCompact => "BeforeCompact",
            EventKind::AfterCompact => "AfterCompact",
            EventKind::CompactFailed => "CompactFailed",
            EventKind::StateChange => "StateChange",
            EventKind::MessageAdded => "MessageAdded",
            EventKind::Custom => "Custom",
            EventKind::HookStarted => "HookStarted",
            EventKind::HookFinished => "HookFinished",
            EventKind::HookFailed => "HookFailed",
            EventKind::AroundModel => "AroundModel",
            EventKind::AroundTool => "AroundTool",
            EventKind::BeforeToolBatch => "BeforeToolBatch",
            EventKind::AfterToolBatch => "AfterToolBatch",
        }
    }

    /// The names these events had before they were renamed `*Failed` (they fire when something
    /// failed; they are not errors themselves): what settings files, stored hooks and scripts
    /// written for earlier builds may still say. [`EventKind`]'s serde form reads them too.
    pub const FORMER_NAMES: [(&'static str, EventKind); 4] = [
        ("RunError", EventKind::RunFailed),
        ("ToolError", EventKind::ToolFailed),
        ("SubAgentError", EventKind::SubAgentFailed),
        ("CompactError", EventKind::CompactFailed),
    ];

    /// True for events whose hooks run in reverse registration order (after, end and error
    /// events), so that paired hooks nest like middleware.
    pub fn is_reverse(self) -> bool {
        matches!(
            self,
            EventKind::RunEnd
                | EventKind::RunFailed
                | EventKind::AfterStep
                | EventKind::AfterModel
                | EventKind::AfterTool
                | EventKind::AfterToolBatch
                | EventKind::ToolFailed
                | EventKind::AfterSubAgent
                | EventKind::SubAgentFailed
                | EventKind::ApprovalResolved
                | EventKind::AfterCompact
                | EventKind::CompactFailed
        )
    }

    /// The flag of this event in an [`Events`] set.
    pub fn flag(self) -> Events {
        Events::from_bits_truncate(1 << (self as u64))
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

bitflags::bitflags! {
    /// A set of events: what a hook wants to receive. Events outside the set cost nothing.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Events: u64 {
        /// [`EventKind::RunStart`]
        const RUN_START = 1 << EventKind::RunStart as u64;
        /// [`EventKind::RunEnd`]
        const RUN_END = 1 << EventKind::RunEnd as u64;
        /// [`EventKind::RunFailed`]
        const RUN_FAILED = 1 << EventKind::RunFailed as u64;
        /// [`EventKind::BeforeStep`]
        const BEFORE_STEP = 1 << EventKind::BeforeStep as u64;
        /// [`EventKind::AfterStep`]
        const AFTER_STEP = 1 << EventKind::AfterStep as u64;
        /// [`EventKind::Stop`]
        const STOP = 1 << EventKind::Stop as u64;
        /// [`EventKind::BeforeModel`]
        const BEFORE_MODEL = 1 << EventKind::BeforeModel as u64;
        /// [`EventKind::AfterModel`]
        const AFTER_MODEL = 1 << EventKind::AfterModel as u64;
        /// [`EventKind::TextDelta`]
        const TEXT_DELTA = 1 << EventKind::TextDelta as u64;
        /// [`EventKind::Thinking`]
        const THINKING = 1 << EventKind::Thinking as u64;
        /// [`EventKind::BeforeTool`]
        const BEFORE_TOOL = 1 << EventKind::BeforeTool as u64;
        /// [`EventKind::AfterTool`]
        const AFTER_TOOL = 1 << EventKind::AfterTool as u64;
        /// [`EventKind::ToolFailed`]
        const TOOL_FAILED = 1 << EventKind::ToolFailed as u64;
        /// [`EventKind::BeforeSubAgent`]
        const BEFORE_SUB_AGENT = 1 << EventKind::BeforeSubAgent as u64;
        /// [`EventKind::AfterSubAgent`]
        const AFTER_SUB_AGENT = 1 << EventKind::AfterSubAgent as u64;
        /// [`EventKind::SubAgentFailed`]
        const SUB_AGENT_FAILED = 1 << EventKind::SubAgentFailed as u64;
        /// [`EventKind::ApprovalRequested`]
        const APPROVAL_REQUESTED = 1 << EventKind::ApprovalRequested as u64;
        /// [`EventKind::ApprovalResolved`]
        const APPROVAL_RESOLVED = 1 << EventKind::ApprovalResolved as u64;
        /// [`EventKind::StoppedByHuman`]
        const STOPPED_BY_HUMAN = 1 << EventKind::StoppedByHuman as u64;
        /// [`EventKind::BeforeCompact`]
        const BEFORE_COMPACT = 1 << EventKind::BeforeCompact as u64;
        /// [`EventKind::AfterCompact`]
        const AFTER_COMPACT = 1 << EventKind::AfterCompact as u64;
        /// [`EventKind::CompactFailed`]
        const COMPACT_FAILED = 1 << EventKind::CompactFailed as u64;
        /// [`EventKind::StateChange`]
        const STATE_CHANGE = 1 << EventKind::StateChange as u64;
        /// [`EventKind::MessageAdded`]
        const MESSAGE_ADDED = 1 << EventKind::MessageAdded as u64;
        /// [`EventKind::Custom`]
        const CUSTOM = 1 << EventKind::Custom as u64;
        /// [`EventKind::HookStarted`]
        const HOOK_STARTED = 1 << EventKind::HookStarted as u64;
        /// [`EventKind::HookFinished`]
        const HOOK_FINISHED = 1 << EventKind::HookFinished as u64;
        /// [`EventKind::HookFailed`]
        const HOOK_FAILED = 1 << EventKind::HookFailed as u64;
        /// [`EventKind::AroundModel`]
        const AROUND_MODEL = 1 << EventKind::AroundModel as u64;
        /// [`EventKind::AroundTool`]
        const AROUND_TOOL = 1 << EventKind::AroundTool as u64;
        /// [`EventKind::BeforeToolBatch`]
        const BEFORE_TOOL_BATCH = 1 << EventKind::BeforeToolBatch as u64;
        /// [`EventKind::AfterToolBatch`]
        const AFTER_TOOL_BATCH = 1 << EventKind::AfterToolBatch as u64;
        /// The meta events, which observe hooks themselves.
        const META = Self::HOOK_STARTED.bits() | Self::HOOK_FINISHED.bits() | Self::HOOK_FAILED.bits();
    }
}
