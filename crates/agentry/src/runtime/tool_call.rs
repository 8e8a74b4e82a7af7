//! The tool phase of a step: each call goes through BeforeTool, validation, around-tool
//! middleware, the tool (or sub-agent), StateChange, and AfterTool or ToolError. Several calls of
//! one turn run concurrently unless the agent turns that off.

use super::driver::Driver;
use agentry_core::hooks::{
    AfterTool, BeforeTool, Events, Next, Terminal, ToolCallRequest, ToolDecision, ToolError,
    ToolOutcome,
};
use agentry_core::{
    AgentTool, Error, Message, RunEvent, Tool, ToolCallRef, ToolCtx, ToolFailure, ToolResult,
    panic_message, schema_violations,
};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Driver {
    /// Runs the calls of one model turn and appends their results, in call order.
    pub(crate) async fn run_tools(&mut self, turn: Arc<Message>) -> Result<(), Error> {
        let count = turn.tool_calls().len();
        let results = if count == 1 || !self.def.parallel_tool_calls {
            let mut results = Vec::with_capacity(count);
            for index in 0..count {
                results.push(self.tool_call(&turn, index).await?);
            }
            results
        } else {
            futures::future::try_join_all((0..count).map(|index| self.tool_call(&turn, index)))
                .await?
        };
        for message in self.machine.accept_tool_results(results) {
            self.scope.added(message).await?;
        }
        Ok(())
    }

    /// One call, start to end. An `Err` is a hook failure that fails the run; everything else the
    /// model should hear about is an error result. Every call streams ToolStarted (with the input
    /// the model sent) and ToolFinished (with the result the model will see).
    async fn tool_call(&self, turn: &Arc<Message>, index: usize) -> Result<ToolResult, Error> {
        let call = &turn.tool_calls()[index];
        let raw = call.arguments.trim();
        let parsed = if raw.is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str::<Value>(raw).map_err(|e| e.to_string())
        };
        self.scope.ctx.send_event(|p| RunEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            input: match &parsed {
                Ok(v) => v.clone(),
                Err(_) => Value::String(call.arguments.clone()),
            },
            agent_path: p.clone(),
        });
        let result = self.settle(turn, index, parsed).await?;
        self.scope.ctx.send_event(|p| RunEvent::ToolFinished {
            result: result.clone(),
            agent_path: p.clone(),
        });
        Ok(result)
    }

    async fn settle(
        &self,
        turn: &Arc<Message>,
        index: usize,
        parsed: Result<Value, String>,
    ) -> Result<ToolResult, Error> {
        let call = &turn.tool_calls()[index];
        let scope = &self.scope;
        let Some(tool) = self.def.find_tool(&call.name) else {
            let known: Vec<&str> = self.def.specs.iter().map(|s| s.name.as_str()).collect();
            let known = if known.is_empty() {
                "(none)".to_string()
            } else {
                known.join(", ")
            };
            let content = format!(
                "there is no tool named `{}`; the tools are: {known}",
                call.name
            );
            return Ok(ToolResult::error(&call.id, &call.name, content));
        };
        let mut input = match parsed {
            Ok(v) => v,
            Err(e) => {
                let content = format!(
                    "the arguments of `{}` are not valid JSON ({e}); call it again with a JSON object that matches its schema",
                    call.name
                );
                return Ok(ToolResult::error(&call.id, &call.name, content));
            }
        };

        let mut decision = None;
        if scope.wants(Events::BEFORE_TOOL) {
            let call = ToolCallRef::in_turn(turn.clone(), index);
            let mut slot = Some(BeforeTool::for_call(call, input));
            scope.run_hooks(&mut slot).await?;
            (decision, input) = slot.expect("hooks give the event back").into_parts();
        }
        let outcome = match decision {
            Some(ToolDecision::Block(reason)) => {
                Ok(ToolResult::error(&call.id, &call.name, reason))
            }
            Some(ToolDecision::Mock(content)) => Ok(ToolResult {
                mocked: true,
                ..ToolResult::ok(&call.id, &call.name, content)
            }),
            None => {
                if let Some(problems) = schema_violations(tool.validator(), &input) {
                    let content = format!(
                        "the arguments of `{}` do not match its schema: {problems}; call it again with arguments that match",
                        call.name
                    );
                    return Ok(ToolResult::error(&call.id, &call.name, content));
                }
                // AfterTool and ToolError hooks see the input after the call: when some want it,
                // the tool reads it in place; otherwise the tool takes it.
                let keep = scope.wants(Events::AFTER_TOOL | Events::TOOL_ERROR);
                let outcome = match tool {
                    AgentTool::Tool { tool, .. } => {
                        let arg = if keep {
                            ToolInput::Borrowed(&input)
                        } else {
                            ToolInput::Owned(std::mem::take(&mut input))
                        };
                        self.invoke(tool.clone(), turn, index, arg)
                            .await
                            .map(|out| ToolResult::ok(&call.id, &call.name, out.content))
                    }
                    AgentTool::SubAgent { agent, .. } => {
                        self.sub_agent(agent, call, &input).await?
                    }
                };
                scope.flush().await?;
                outcome
            }
        };
        match outcome {
            Ok(result) if scope.wants(Events::AFTER_TOOL) => {
                let mut slot = Some(AfterTool { input, result });
                scope.run_hooks(&mut slot).await?;
                Ok(slot.expect("hooks give the event back").result)
            }
            Ok(result) => Ok(result),
            Err(failure) => {
                if let Some(hook_error) = failure.hook_error() {
                    return Err(Error::Hook(hook_error.clone()));
                }
                if scope.wants(Events::TOOL_ERROR) {
                    let call_ref = ToolCallRef::in_turn(turn.clone(), index);
                    let ev = ToolError::for_call(call_ref, input, failure.message().to_string());
                    let ev = scope.hook(ev).await?;
                    if let Some(content) = ev.recovery() {
                        return Ok(ToolResult::ok(&call.id, &call.name, content));
                    }
                }
                Ok(ToolResult::error(&call.id, &call.name, failure.message()))
            }
        }
    }

    /// Calls a tool through the around-tool middleware, catching panics.
    async fn invoke(
        &self,
        tool: Arc<dyn Tool>,
        turn: &Arc<Message>,
        index: usize,
        input: ToolInput<'_>,
    ) -> ToolOutcome {
        let call = &turn.tool_calls()[index];
        let ctx = ToolCtx::for_turn(self.scope.ctx.clone(), turn.clone(), index);
        if !self.scope.wants(Events::AROUND_TOOL) {
            return call_tool(&*tool, input, ctx).await;
        }
        let chain: Arc<[_]> = self.scope.hooks.around_tool().into();
        let terminal: Arc<dyn Terminal<ToolCallRequest, ToolOutcome>> =
            Arc::new(move |req: ToolCallRequest| {
                let tool = tool.clone();
                let ctx = ctx.clone();
                async move { call_tool(&*tool, ToolInput::Owned(req.input), ctx).await }
            });
        let req = ToolCallRequest {
            call_id: call.id.clone(),
            name: call.name.clone(),
            input: input.into_owned(),
        };
        Next::start(
            chain,
            terminal,
            self.scope.ctx.clone(),
            self.scope.hooks.clone(),
        )
        .run(req)
        .await
    }
}

/// A tool's input: taken by the tool, or lent to it when hooks need it afterwards.
enum ToolInput<'a> {
    Owned(Value),
    Borrowed(&'a Value),
}

impl ToolInput<'_> {
    fn into_owned(self) -> Value {
        match self {
            ToolInput::Owned(v) => v,
            ToolInput::Borrowed(v) => v.clone(),
        }
    }
}

async fn call_tool(tool: &dyn Tool, input: ToolInput<'_>, ctx: ToolCtx) -> ToolOutcome {
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        let name = &tool.spec().name;
        ToolFailure::new(format!("tool `{name}` panicked: {}", panic_message(p)))
    };
    let start = || match input {
        ToolInput::Owned(v) => tool.call(v, ctx),
        ToolInput::Borrowed(v) => tool.call_ref(v, ctx),
    };
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(start)) {
        Ok(fut) => fut,
        Err(p) => return Err(panicked(p)),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(p) => Err(panicked(p)),
    }
}
