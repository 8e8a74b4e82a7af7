//! [`Telemetry`]: `tracing` spans for runs, steps, model calls, tool calls and sub-agents, with
//! the attribute names of the OpenTelemetry GenAI semantic conventions.

use super::per_run::PerRun;
use agentry_core::hooks::{
    AfterModel, AfterStep, AfterTool, BeforeModel, BeforeStep, BeforeSubAgent, BeforeTool, Events,
    Hook, HookCtx, HookExt, HookRegistration, HookResult, IntoHook, RunEnd, RunFailed, RunStart,
};
use std::collections::HashMap;
use std::future::Future;
use tracing::field::Empty;
use tracing::{Span, info_span};

/// Emits a `tracing` span for each run (`invoke_agent`), step, model call (`chat`) and tool call
/// (`execute_tool`), named and attributed as the OpenTelemetry GenAI semantic conventions say
/// (`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.request.model`,
/// `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons`,
/// `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.conversation.id`, `error.type`). A
/// sub-agent's run span is a child of the parent's tool-call span that started it.
///
/// The spans go to whatever `tracing` subscriber the program installs; with
/// `tracing-opentelemetry` they become OpenTelemetry spans (see the `telemetry` example). The
/// target is `agentry`, at level INFO. Message contents are not recorded, and the texts it
/// does record (stop reasons, errors) pass through the run's redactor. Images, documents and
/// audio are recorded by kind, media type and size only (`agentry.input.media` on the run span,
/// `agentry.result.media` on a tool call's), never their bytes.
///
/// Attach it to the runtime (`Runtime::new().with(Telemetry::new())`) to trace every run; it is
/// an advisory hook named `telemetry` at priority 250, so it wraps the guards and a failure of
/// it never fails a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Telemetry;

impl Telemetry {
    /// The telemetry hook.
    pub fn new() -> Self {
        Telemetry
    }
}

impl IntoHook for Telemetry {
    fn into_hook(self) -> HookRegistration {
        TelemetryHook::default()
            .named("telemetry")
            .priority(250)
            .advisory()
    }
}

/// The open spans, by run and then by what they cover (`run`, `step`, `model`, `tool/<id>`).
#[derive(Default)]
struct TelemetryHook {
    spans: PerRun<HashMap<String, Span>>,
}

/// A token count as the signed integer OpenTelemetry attributes hold (an unsigned one above
/// `i64::MAX` would be exported as text).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl TelemetryHook {
    fn get(&self, run: &str, what: &str) -> Option<Span> {
        self.spans.lock().get(run)?.get(what).cloned()
    }

    fn open(&self, run: &str, what: &str, span: Span) {
        let mut spans = self.spans.lock();
        spans
            .entry(run.to_owned())
            .or_default()
            .insert(what.to_owned(), span);
    }

    fn close(&self, run: &str, what: &str) -> Option<Span> {
        self.spans.lock().get_mut(run)?.remove(what)
    }

    /// The span a new span of run `run` goes under: its step, else the run itself.
    fn parent_in(&self, run: &str) -> Span {
        self.get(run, "step")
            .or_else(|| self.get(run, "run"))
            .unwrap_or_else(Span::none)
    }
}

impl Hook for TelemetryHook {
    fn wants(&self) -> Events {
        Events::RUN_START
            | Events::RUN_END
            | Events::RUN_FAILED
            | Events::BEFORE_STEP
            | Events::AFTER_STEP
            | Events::BEFORE_MODEL
            | Events::AFTER_MODEL
            | Events::BEFORE_TOOL
            | Events::AFTER_TOOL
            | Events::BEFORE_SUB_AGENT
    }

    fn run_start(
        &self,
        ev: RunStart,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunStart>> + Send {
        let parent = match ctx.parent_run_id() {
            Some(parent) => self
                .close(parent, &format!("sub/{}", ctx.agent_name()))
                .unwrap_or_else(|| self.parent_in(parent)),
            None => Span::none(),
        };
        let span = info_span!(
            target: "agentry",
            parent: &parent,
            "invoke_agent",
            otel.name = %format!("invoke_agent {}", ctx.agent_name()),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %ctx.agent_name(),
            gen_ai.conversation.id = ctx.session_id(),
            agentry.run_id = %ctx.run_id(),
            agentry.agent_path = %ctx.agent_path(),
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            agentry.input.media = media_summary(&ev.input),
            agentry.stop_reason = Empty,
            error.type = Empty,
            otel.status_code = Empty,
        );
        self.open(ctx.run_id(), "run", span);
        async move { Ok(ev) }
    }

    fn before_step(
        &self,
        ev: BeforeStep,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeStep>> + Send {
        let run = self.get(ctx.run_id(), "run").unwrap_or_else(Span::none);
        let span = info_span!(target: "agentry", parent: &run, "step", agentry.step = i64::from(ev.step()));
        self.open(ctx.run_id(), "step", span);
        async move { Ok(ev) }
    }

    fn after_step(
        &self,
        ev: AfterStep,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterStep>> + Send {
        self.close(ctx.run_id(), "step");
        async move { Ok(ev) }
    }

    fn before_model(
        &self,
        ev: BeforeModel,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeModel>> + Send {
        let params = &ev.request.params;
        let span = info_span!(
            target: "agentry",
            parent: &self.parent_in(ctx.run_id()),
            "chat",
            otel.name = "chat",
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.request.model = Empty,
            gen_ai.request.temperature = params.temperature.map(f64::from),
            gen_ai.request.top_p = params.top_p.map(f64::from),
            gen_ai.request.max_tokens = params.max_tokens.map(i64::from),
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.response.finish_reasons = Empty,
        );
        self.open(ctx.run_id(), "model", span);
        async move { Ok(ev) }
    }

    fn after_model(
        &self,
        ev: AfterModel,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterModel>> + Send {
        if let Some(span) = self.close(ctx.run_id(), "model") {
            if !ev.model().is_empty() {
                span.record("gen_ai.request.model", ev.model());
                span.record("otel.name", format!("chat {}", ev.model()));
            }
            let usage = &ev.response.usage;
            span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
            span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
            span.record(
                "gen_ai.response.finish_reasons",
                format!("[\"{}\"]", ev.response.finish_reason.as_str()),
            );
        }
        async move { Ok(ev) }
    }

    fn before_tool(
        &self,
        ev: BeforeTool,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeTool>> + Send {
        let span = info_span!(
            target: "agentry",
            parent: &self.parent_in(ctx.run_id()),
            "execute_tool",
            otel.name = %format!("execute_tool {}", ev.name()),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %ev.name(),
            gen_ai.tool.call.id = %ev.call_id(),
            agentry.result.media = Empty,
            error.type = Empty,
            otel.status_code = Empty,
        );
        self.open(ctx.run_id(), &format!("tool/{}", ev.call_id()), span);
        async move { Ok(ev) }
    }

    fn before_sub_agent(
        &self,
        ev: BeforeSubAgent,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<BeforeSubAgent>> + Send {
        // The child's run span goes under this call's tool span.
        if let Some(tool) = self.get(ctx.run_id(), &format!("tool/{}", ev.call_id())) {
            self.open(ctx.run_id(), &format!("sub/{}", ev.agent()), tool);
        }
        async move { Ok(ev) }
    }

    fn after_tool(
        &self,
        ev: AfterTool,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<AfterTool>> + Send {
        if let Some(span) = self.close(ctx.run_id(), &format!("tool/{}", ev.call_id())) {
            if let Some(media) = media_summary(&ev.content) {
                span.record("agentry.result.media", media);
            }
            if ev.is_error {
                span.record("error.type", "tool_error");
                span.record("otel.status_code", "ERROR");
            }
        }
        async move { Ok(ev) }
    }

    fn run_end(
        &self,
        ev: RunEnd,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunEnd>> + Send {
        // Forgetting the run closes whatever of it is still open.
        if let Some(span) = self
            .spans
            .forget(ctx.run_id())
            .and_then(|mut s| s.remove("run"))
        {
            span.record("gen_ai.usage.input_tokens", int(ev.usage().input_tokens));
            span.record("gen_ai.usage.output_tokens", int(ev.usage().output_tokens));
            span.record(
                "agentry.stop_reason",
                ctx.redact(&ev.stop().to_string()).as_ref(),
            );
        }
        async move { Ok(ev) }
    }

    fn run_failed(
        &self,
        ev: RunFailed,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunFailed>> + Send {
        if let Some(span) = self
            .spans
            .forget(ctx.run_id())
            .and_then(|mut s| s.remove("run"))
        {
            span.record("error.type", "run_error");
            span.record("otel.status_code", "ERROR");
            span.record(
                "agentry.stop_reason",
                ctx.redact(&ev.error().to_string()).as_ref(),
            );
        }
        async move { Ok(ev) }
    }
}

/// The media parts of `content` as a span attribute: each part's kind, media type and size
/// (`image image/png 48213 B, file application/pdf 90311 B`), never their bytes; `None` for
/// text only.
fn media_summary(content: &agentry_core::Content) -> Option<String> {
    let parts: Vec<String> = content
        .media()
        .filter_map(|p| {
            let m = p.media()?;
            Some(match m.size() {
                Some(size) => format!("{} {} {size} B", p.kind(), m.media_type),
                None => format!("{} {} url", p.kind(), m.media_type),
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}
