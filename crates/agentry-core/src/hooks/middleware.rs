//! Around middleware: hooks that wrap a model or tool call and decide whether, and how, to call
//! `next` (retry, cache, fallback, timing).

use super::error::panic_message;
use super::registry::HookMeta;
use super::{EventKind, HookCtx, HookError, HookFailure};
use crate::{Error, ModelResponse, RunContext, ToolFailure, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// What around-model middleware returns.
pub type ModelOutcome = Result<ModelResponse, Error>;

/// What around-tool middleware returns.
pub type ToolOutcome = Result<ToolOutput, ToolFailure>;

/// The tool call around-tool middleware sees.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRequest {
    /// The call id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The validated input.
    pub input: Value,
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
        Err(ToolFailure::new(err.to_string()))
    }
    const KIND: EventKind = EventKind::AroundTool;
}

/// The rest of a middleware chain: `next.run(req).await` calls the next middleware, or the model
/// or tool itself after the last one.
pub struct Next<Req, Out> {
    chain: Arc<[AroundEntry<Req, Out>]>,
    index: usize,
    terminal: Arc<dyn Terminal<Req, Out>>,
    run: RunContext,
}

impl<Req: Send + 'static, Out: AroundOutput> Next<Req, Out> {
    /// The start of a chain (runtimes call this).
    pub fn start(
        chain: Arc<[AroundEntry<Req, Out>]>,
        terminal: Arc<dyn Terminal<Req, Out>>,
        run: RunContext,
    ) -> Self {
        Next {
            chain,
            index: 0,
            terminal,
            run,
        }
    }

    /// The run's context.
    pub fn ctx(&self) -> &RunContext {
        &self.run
    }

    /// Calls the rest of the chain.
    pub fn run(self, req: Req) -> BoxFuture<'static, Out> {
        let Some(entry) = self.chain.get(self.index).cloned() else {
            return self.terminal.call(req);
        };
        let ctx = HookCtx::new(self.run.clone(), entry.meta.name.clone());
        let next = Next {
            chain: self.chain,
            index: self.index + 1,
            terminal: self.terminal,
            run: self.run,
        };
        Box::pin(async move {
            let fail = |failure| {
                Out::from_hook_error(HookError {
                    hook: entry.meta.name.to_string(),
                    event: Out::KIND,
                    failure,
                })
            };
            let call = AssertUnwindSafe(entry.handler.around(req, next, &ctx)).catch_unwind();
            let outcome = match entry.meta.timeout {
                Some(limit) => match tokio::time::timeout(limit, call).await {
                    Ok(r) => r,
                    Err(_) => return fail(HookFailure::Timeout(limit)),
                },
                None => call.await,
            };
            match outcome {
                Ok(out) => out,
                Err(panic) => fail(HookFailure::Panic(panic_message(panic))),
            }
        })
    }
}
