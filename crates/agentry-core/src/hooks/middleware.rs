//! Around middleware: hooks that wrap a model or tool call and decide whether, and how, to call
//! `next` (retry, cache, fallback, timing).

use super::registry::HookMeta;
use super::{
    EventKind, Events, HookCtx, HookError, HookFailed, HookFailure, HookFinished, HookStarted,
    Hooks,
};
use crate::describe::panic_message;
use crate::{Error, ModelResponse, RunContext, ToolFailure, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

/// What around-model middleware returns.
pub type ModelOutcome = Result<ModelResponse, Error>;

/// What around-tool middleware returns.
pub type ToolOutcome = Result<ToolOutput, ToolFailure>;

/// The tool call around-tool middleware sees. A middleware may change the input it passes on
/// (the tool receives it); which call it is (its id and tool name) cannot change.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRequest {
    call_id: String,
    name: String,
    /// The validated input.
    pub input: Value,
}

impl ToolCallRequest {
    /// A new request (runtimes create these).
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolCallRequest {
            call_id: call_id.into(),
            name: name.into(),
            input,
        }
    }
    /// The call id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Handles one kind of around middleware. Implemented by closures and plugins.
pub trait HandlesAround<Req, Out>: Send + Sync {
    /// Wraps the call.
    fn around<'a>(&'a self, req: Req, next: Next<Req, Out>, ctx: &'a HookCtx)
    -> BoxFuture<'a, Out>;
}

/// One registered middleware.
pub struct AroundEntry<Req, Out> {
    /// How it is run.
    pub meta: Arc<HookMeta>,
    /// The handler.
    pub handler: Arc<dyn HandlesAround<Req, Out>>,
}

impl<Req, Out> Clone for AroundEntry<Req, Out> {
    fn clone(&self) -> Self {
        AroundEntry {
            meta: self.meta.clone(),
            handler: self.handler.clone(),
        }
    }
}

/// The innermost call a middleware chain wraps.
pub trait Terminal<Req, Out>: Send + Sync {
    /// Makes the call.
    fn call(&self, req: Req) -> BoxFuture<'static, Out>;
}

impl<Req, Out, F, Fut> Terminal<Req, Out> for F
where
    F: Fn(Req) -> Fut + Send + Sync,
    Fut: Future<Output = Out> + Send + 'static,
{
    fn call(&self, req: Req) -> BoxFuture<'static, Out> {
        Box::pin(self(req))
    }
}

/// An outcome a failing middleware can be turned into.
pub trait AroundOutput: Send + 'static {
    /// The outcome for a middleware that panicked or timed out.
    fn from_hook_error(err: HookError) -> Self;
    /// The event kind, for error messages.
    const KIND: EventKind;
}

impl AroundOutput for ModelOutcome {
    fn from_hook_error(err: HookError) -> Self {
        Err(Error::Hook(err))
    }
    const KIND: EventKind = EventKind::AroundModel;
}

impl AroundOutput for ToolOutcome {
    fn from_hook_error(err: HookError) -> Self {
        Err(ToolFailure::hook(err))
    }
    const KIND: EventKind = EventKind::AroundTool;
}

/// The rest of a middleware chain: `next.run(req).await` calls the next middleware, or the model
/// or tool itself after the last one. `Next` is `Clone`: a middleware that retries calls
/// `next.clone().run(req.clone())` as often as it likes.
pub struct Next<Req, Out> {
    chain: Arc<[AroundEntry<Req, Out>]>,
    index: usize,
    terminal: Arc<dyn Terminal<Req, Out>>,
    run: RunContext,
    hooks: Arc<Hooks>,
}

impl<Req, Out> Clone for Next<Req, Out> {
    fn clone(&self) -> Self {
        Next {
            chain: self.chain.clone(),
            index: self.index,
            terminal: self.terminal.clone(),
            run: self.run.clone(),
            hooks: self.hooks.clone(),
        }
    }
}

impl<Req: Clone + Send + 'static, Out: AroundOutput> Next<Req, Out> {
    /// The start of a chain (runtimes call this). `hooks` are the run's hooks: their meta-event
    /// observers see each middleware start, finish or fail.
    pub fn start(
        chain: Arc<[AroundEntry<Req, Out>]>,
        terminal: Arc<dyn Terminal<Req, Out>>,
        run: RunContext,
        hooks: Arc<Hooks>,
    ) -> Self {
        Next {
            chain,
            index: 0,
            terminal,
            run,
            hooks,
        }
    }

    /// The run's context.
    pub fn ctx(&self) -> &RunContext {
        &self.run
    }

    /// Calls the rest of the chain.
    ///
    /// A middleware that errs (panics, or overruns its timeout) fails the run like any hook; an
    /// advisory one is skipped instead: the call goes on to the rest of the chain without it.
    pub fn run(self, req: Req) -> BoxFuture<'static, Out> {
        let Some(entry) = self.chain.get(self.index).cloned() else {
            return self.terminal.call(req);
        };
        let ctx = HookCtx::new(self.run.clone(), entry.meta.name.clone());
        let next = Next {
            index: self.index + 1,
            ..self
        };
        Box::pin(async move {
            let hooks = next.hooks.clone();
            let observed = hooks.wants(Events::META);
            let name = &entry.meta.name;
            if observed {
                let ev = HookStarted::new(name.clone(), Out::KIND);
                if let Err(e) = hooks.observe(ev, ctx.run()).await {
                    return Out::from_hook_error(e);
                }
                ctx.run().hook_opened(name, Out::KIND, entry.meta.advisory);
            }
            let t0 = Instant::now();
            let fallback = entry.meta.advisory.then(|| (next.clone(), req.clone()));
            let failure = match call_guarded(&entry, req, next, &ctx).await {
                Ok(out) => {
                    if observed {
                        ctx.run().hook_closed(name, Out::KIND);
                        let ev = HookFinished::new(name.clone(), Out::KIND, t0.elapsed());
                        if let Err(e) = hooks.observe(ev, ctx.run()).await {
                            return Out::from_hook_error(e);
                        }
                    }
                    return out;
                }
                Err(failure) => failure,
            };
            let err = HookError {
                hook: entry.meta.name.to_string(),
                event: Out::KIND,
                failure,
            };
            if observed {
                ctx.run().hook_closed(name, Out::KIND);
                let ev = HookFailed::new(
                    name.clone(),
                    Out::KIND,
                    t0.elapsed(),
                    err.failure.to_string(),
                    entry.meta.advisory,
                );
                if let Err(e) = hooks.observe(ev, ctx.run()).await {
                    return Out::from_hook_error(e);
                }
            }
            match fallback {
                Some((next, req)) => {
                    let error = err.failure.to_string();
                    let error = ctx.redact(&error);
                    tracing::warn!(hook = %err.hook, event = %err.event, %error, "advisory middleware failed; skipping it");
                    next.run(req).await
                }
                None => Out::from_hook_error(err),
            }
        })
    }
}

/// Runs one middleware, catching a panic (while creating or polling its future) and a timeout.
async fn call_guarded<Req, Out: AroundOutput>(
    entry: &AroundEntry<Req, Out>,
    req: Req,
    next: Next<Req, Out>,
    ctx: &HookCtx,
) -> Result<Out, HookFailure> {
    let fut =
        match std::panic::catch_unwind(AssertUnwindSafe(|| entry.handler.around(req, next, ctx))) {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind(),
            Err(panic) => return Err(HookFailure::Panic(panic_message(panic))),
        };
    let outcome = match entry.meta.timeout {
        Some(limit) => match tokio::time::timeout(limit, fut).await {
            Ok(r) => r,
            Err(_) => return Err(HookFailure::Timeout(limit)),
        },
        None => fut.await,
    };
    outcome.map_err(|panic| HookFailure::Panic(panic_message(panic)))
}
