//! The agentry hook command hooks register as: each agentry event goes to the Claude Code events
//! it maps to, then to the handlers registered under its own name.

use super::Engine;
use agentry_core::hooks::*;
use std::sync::Arc;

/// The agentry hook behind [`CommandHooks`](crate::CommandHooks): one engine, the events its
/// handlers need.
pub(crate) struct EngineHook {
    /// The engine the handlers run in.
    pub(crate) engine: Arc<Engine>,
    /// The agentry events the handlers need.
    pub(crate) wants: Events,
}

impl Hook for EngineHook {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        self.engine.name.clone().into()
    }

    fn wants(&self) -> Events {
        self.wants
    }

    async fn run_start(&self, ev: RunStart, ctx: &HookCtx) -> HookResult<RunStart> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.user_prompt_submit(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn run_end(&self, ev: RunEnd, ctx: &HookCtx) -> HookResult<RunEnd> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.run_ended(ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn run_failed(&self, ev: RunFailed, ctx: &HookCtx) -> HookResult<RunFailed> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.run_ended(ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn before_step(&self, ev: BeforeStep, ctx: &HookCtx) -> HookResult<BeforeStep> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn after_step(&self, ev: AfterStep, ctx: &HookCtx) -> HookResult<AfterStep> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn stop(&self, ev: Stop, ctx: &HookCtx) -> HookResult<Stop> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.stop_hooks(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn before_model(&self, mut ev: BeforeModel, ctx: &HookCtx) -> HookResult<BeforeModel> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.add_later_context(&mut ev, ctx.run_id());
        self.engine.native(ev, ctx).await
    }

    async fn after_model(&self, ev: AfterModel, ctx: &HookCtx) -> HookResult<AfterModel> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn text_delta(&self, ev: TextDelta, ctx: &HookCtx) -> HookResult<TextDelta> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn thinking(&self, ev: Thinking, ctx: &HookCtx) -> HookResult<Thinking> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn before_tool(&self, ev: BeforeTool, ctx: &HookCtx) -> HookResult<BeforeTool> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.pre_tool_use(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn after_tool(&self, ev: AfterTool, ctx: &HookCtx) -> HookResult<AfterTool> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.post_tool_use(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn tool_failed(&self, ev: ToolFailed, ctx: &HookCtx) -> HookResult<ToolFailed> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.post_tool_use_failure(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn before_sub_agent(
        &self,
        ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> HookResult<BeforeSubAgent> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.subagent_start(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn after_sub_agent(&self, ev: AfterSubAgent, ctx: &HookCtx) -> HookResult<AfterSubAgent> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn sub_agent_failed(
        &self,
        ev: SubAgentFailed,
        ctx: &HookCtx,
    ) -> HookResult<SubAgentFailed> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn approval_requested(
        &self,
        ev: ApprovalRequested,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalRequested> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.permission_request(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn approval_resolved(
        &self,
        ev: ApprovalResolved,
        ctx: &HookCtx,
    ) -> HookResult<ApprovalResolved> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn stopped_by_human(
        &self,
        ev: StoppedByHuman,
        ctx: &HookCtx,
    ) -> HookResult<StoppedByHuman> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn before_compact(&self, ev: BeforeCompact, ctx: &HookCtx) -> HookResult<BeforeCompact> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.pre_compact(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn after_compact(&self, ev: AfterCompact, ctx: &HookCtx) -> HookResult<AfterCompact> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        let ev = self.engine.post_compact(ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn compact_failed(&self, ev: CompactFailed, ctx: &HookCtx) -> HookResult<CompactFailed> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn state_change(&self, ev: StateChange, ctx: &HookCtx) -> HookResult<StateChange> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn before_tool_batch(
        &self,
        ev: BeforeToolBatch,
        ctx: &HookCtx,
    ) -> HookResult<BeforeToolBatch> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }

    async fn after_tool_batch(
        &self,
        ev: AfterToolBatch,
        ctx: &HookCtx,
    ) -> HookResult<AfterToolBatch> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.post_tool_batch(&ev, ctx).await?;
        self.engine.native(ev, ctx).await
    }

    async fn message_added(&self, ev: MessageAdded, ctx: &HookCtx) -> HookResult<MessageAdded> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.transcribe(&ev, ctx);
        self.engine.native(ev, ctx).await
    }

    async fn custom(&self, ev: Custom, ctx: &HookCtx) -> HookResult<Custom> {
        if !self.engine.applies_to(ctx) {
            return Ok(ev);
        }
        self.engine.native(ev, ctx).await
    }
}
