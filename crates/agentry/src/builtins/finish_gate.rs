//! [`FinishGate`]: a check on the final answer that sends the model back to work, a bounded
//! number of times.

use super::per_run::PerRun;
use agentry_core::hooks::{
    Events, Hook, HookCtx, HookExt, HookRegistration, HookResult, IntoHook, RunEnd, RunFailed, Stop,
};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A check of the final answer: `Err(message)` rejects it with what the model should fix.
type Check = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// Checks a run's final answer before the run stops; when the check rejects it, vetoes the stop
/// (a Stop hook) and sends the check's message to the model as the next user turn, so it tries
/// again. After [`max_rejections`](Self::max_rejections) rejections in one run (default 2) the
/// gate gives up and lets the answer stand, with a warning in the log.
///
/// Use it for what a JSON Schema cannot say: a word count, required sections, a citation
/// format. It is a hook named `finish-gate` at priority 0; register several for several checks.
///
/// ```
/// use agentry::builtins::FinishGate;
///
/// let gate = FinishGate::text(|answer| {
///     if answer.contains("Sources:") {
///         Ok(())
///     } else {
///         Err("End your answer with a `Sources:` line listing where each fact comes from.".into())
///     }
/// })
/// .max_rejections(3);
/// ```
#[derive(Clone)]
pub struct FinishGate {
    check: Check,
    max_rejections: u32,
}

impl std::fmt::Debug for FinishGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishGate")
            .field("max_rejections", &self.max_rejections)
            .finish_non_exhaustive()
    }
}

impl FinishGate {
    /// A gate with `check` on the final answer as JSON (a text answer is a JSON string; a
    /// structured output, its value).
    pub fn new(check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static) -> Self {
        FinishGate {
            check: Arc::new(check),
            max_rejections: 2,
        }
    }

    /// A gate with `check` on a text answer (a structured output is checked as its JSON text).
    pub fn text(check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static) -> Self {
        FinishGate::new(move |answer| match answer {
            Value::String(text) => check(text),
            other => check(&other.to_string()),
        })
    }

    /// How many times one run's answer may be sent back before the gate gives up.
    pub fn max_rejections(mut self, n: u32) -> Self {
        self.max_rejections = n;
        self
    }
}

impl IntoHook for FinishGate {
    fn into_hook(self) -> HookRegistration {
        GateHook {
            gate: self,
            rejections: PerRun::default(),
        }
        .named("finish-gate")
    }
}

struct GateHook {
    gate: FinishGate,
    /// Rejections so far, by run.
    rejections: PerRun<u32>,
}

impl Hook for GateHook {
    fn wants(&self) -> Events {
        Events::STOP | Events::RUN_END | Events::RUN_FAILED
    }

    fn stop(&self, mut ev: Stop, ctx: &HookCtx) -> impl Future<Output = HookResult<Stop>> + Send {
        if let Some(answer) = ev.output().as_ref().filter(|_| ev.reason().is_natural())
            && let Err(message) = (self.gate.check)(answer)
        {
            let mut rejections = self.rejections.lock();
            let count = rejections.entry(ctx.run_id().to_owned()).or_default();
            if *count < self.gate.max_rejections {
                *count += 1;
                ev.veto(message);
            } else {
                tracing::warn!(
                    hook = %ctx.hook_name(),
                    run = %ctx.run_id(),
                    rejections = *count,
                    reason = %ctx.redact(&message),
                    "the finish gate gives up: the answer stands"
                );
            }
        }
        async move { Ok(ev) }
    }

    fn run_end(
        &self,
        ev: RunEnd,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunEnd>> + Send {
        self.rejections.forget(ctx.run_id());
        async move { Ok(ev) }
    }

    fn run_failed(
        &self,
        ev: RunFailed,
        ctx: &HookCtx,
    ) -> impl Future<Output = HookResult<RunFailed>> + Send {
        self.rejections.forget(ctx.run_id());
        async move { Ok(ev) }
    }
}
