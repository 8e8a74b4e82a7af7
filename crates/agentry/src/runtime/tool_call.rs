//! The tool phase of a step: each call goes through BeforeTool, validation, around-tool
//! middleware, the tool (or sub-agent), StateChange, and AfterTool or ToolError. Several calls of
//! one turn run concurrently unless the agent turns that off.

use super::driver::Driver;
use super::scope::Scope;
use agentry_core::hooks::{
    AfterTool, BeforeTool, Events, Next, Terminal, ToolCallRequest, ToolDecision, ToolError,
    ToolOutcome,
};
use agentry_core::{AgentTool, Error, RunEvent, Tool, ToolCall, ToolCtx, ToolFailure, ToolResult};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Driver {
    /// Runs the calls of one model turn and appends their results, in call order.
    pub(crate) async fn run_tools(&mut self, calls: Vec<ToolCall>) -> Result<(), Error> {
        let results = if calls.len() == 1 || !self.def.parallel_tool_calls {
            let mut results = Vec::with_capacity(calls.len());
            for call in &calls {
                results.push(self.tool_call(call).await?);
            }
            results
        } else {
            futures::future::try_join_all(calls.iter().map(|call| self.tool_call(call))).await?
        };
        for message in self.machine.accept_tool_results(results) {
            self.scope.added(message).await?;
        }
        Ok(())
    }

    /// One call, start to end. An `Err` is a hook failure that fails the run; everything else the
    /// model should hear about is an error result.
    async fn tool_call(&self, call: &ToolCall) -> Result<ToolResult, Error> {
        let scope = &self.scope;
        let Some(tool) = self.def.find_tool(&call.name) else {
            let known: Vec<&str> = self.def.specs.iter().map(|s| s.name.as_str()).collect();
            let content = format!(
                "there is no tool named `{}`; the tools are: {}",
                call.name,
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                }
            );
            return Ok(finished(
                scope,
                ToolResult::error(&call.id, &call.name, content),
            ));
        };
        let raw = call.arguments.trim();
        let parsed = if raw.is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str::<Value>(raw)
        };
        let mut input = match parsed {
            Ok(v) => v,
            Err(e) => {
                let content = format!(
                    "the arguments of `{}` are not valid JSON ({e}); call it again with a JSON object that matches its schema",
                    call.name
                );
                return Ok(finished(
                    scope,
                    ToolResult::error(&call.id, &call.name, content),
                ));
            }
        };

        let mut decided = None;
        if scope.wants(Events::BEFORE_TOOL) {
            let mut ev = scope
                .hook(BeforeTool::new(call.id.clone(), call.name.clone(), input))
                .await?;
            decided = ev.decision().cloned();
            input = std::mem::take(&mut ev.input);
        }
        let result = match decided {
            Some(ToolDecision::Block(reason)) => ToolResult::error(&call.id, &call.name, reason),
            Some(ToolDecision::Mock(content)) => ToolResult {
                mocked: true,
                ..ToolResult::ok(&call.id, &call.name, content)
            },
            None => {
                let problems: Vec<String> = tool
                    .validator()
                    .iter_errors(&input)
                    .map(|e| {
                        let at = e.instance_path().to_string();
                        if at.is_empty() {
                            e.to_string()
                        } else {
                            format!("at {at}: {e}")
                        }
                    })
                    .collect();
                if !problems.is_empty() {
                    let content = format!(
                        "the arguments of `{}` do not match its schema: {}; call it again with arguments that match",
                        call.name,
                        problems.join("; ")
                    );
                    return Ok(finished(
                        scope,
                        ToolResult::error(&call.id, &call.name, content),
                    ));
                }
                if scope.ctx.has_event_stream() {
                    let (id, name, inp) = (call.id.clone(), call.name.clone(), input.clone());
                    scope.ctx.send_event(|p| RunEvent::ToolStarted {
                        call_id: id,
                        name,
                        input: inp,
                        agent_path: p.clone(),
                    });
                }
                let outcome = match tool {
                    AgentTool::Tool { tool, .. } => {
                        self.invoke(tool.clone(), call, input.clone()).await
                    }
                    AgentTool::SubAgent { agent, .. } => {
                        self.sub_agent(agent, call, &input).await?
                    }
                };
                scope.flush().await?;
                match outcome {
                    Ok(out) => ToolResult::ok(&call.id, &call.name, out.content),
                    Err(failure) => {
                        let mut result =
                            ToolResult::error(&call.id, &call.name, failure.message().to_string());
                        if scope.wants(Events::TOOL_ERROR) {
                            let ev = ToolError::new(
                                call.id.clone(),
                                call.name.clone(),
                                input,
                                failure.message().to_string(),
                            );
                            let ev = scope.hook(ev).await?;
                            if let Some(content) = ev.recovery() {
                                result = ToolResult::ok(&call.id, &call.name, content);
                            }
                        }
                        return Ok(finished(scope, result));
                    }
                }
            }
        };
        let result = if scope.wants(Events::AFTER_TOOL) {
            scope.hook(AfterTool { input, result }).await?.result
        } else {
            result
        };
        Ok(finished(scope, result))
    }

    /// Calls a tool through the around-tool middleware, catching panics.
    async fn invoke(&self, tool: Arc<dyn Tool>, call: &ToolCall, input: Value) -> ToolOutcome {
        let ctx = ToolCtx::new(
            self.scope.ctx.clone(),
            Arc::from(call.id.as_str()),
            Arc::from(call.name.as_str()),
        );
        if !self.scope.wants(Events::AROUND_TOOL) {
            return call_tool(&*tool, input, ctx).await;
        }
        let chain: Arc<[_]> = self.scope.hooks.around_tool().into();
        let terminal: Arc<dyn Terminal<ToolCallRequest, ToolOutcome>> =
            Arc::new(move |req: ToolCallRequest| {
                let tool = tool.clone();
                let ctx = ctx.clone();
                async move { call_tool(&*tool, req.input, ctx).await }
            });
        let req = ToolCallRequest {
            call_id: call.id.clone(),
            name: call.name.clone(),
            input,
        };
        Next::start(chain, terminal, self.scope.ctx.clone())
            .run(req)
            .await
    }
}

async fn call_tool(tool: &dyn Tool, input: Value, ctx: ToolCtx) -> ToolOutcome {
    let name = tool.spec().name.clone();
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic".into());
        ToolFailure::new(format!("tool `{name}` panicked: {msg}"))
    };
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(input, ctx))) {
        Ok(fut) => fut,
        Err(p) => return Err(panicked(p)),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(p) => Err(panicked(p)),
    }
}

/// Streams the end of a call and hands its result back.
fn finished(scope: &Scope, result: ToolResult) -> ToolResult {
    if scope.ctx.has_event_stream() {
        let r = result.clone();
        scope.ctx.send_event(|p| RunEvent::ToolFinished {
            result: r,
            agent_path: p.clone(),
        });
    }
    result
}
