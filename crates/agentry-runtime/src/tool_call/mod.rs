//! The tool phase of a step: each call goes through BeforeTool, validation, around-tool
//! middleware, the tool (or sub-agent), StateChange, and AfterTool or ToolFailed. Several calls of
//! one turn run concurrently unless the agent turns that off.

use super::RuntimeInner;
use super::driver::Driver;
use super::effects::{SubAgentOutcome, SubAgentRequest};
use super::open_calls::{OpenCall, OpenCalls};
use super::scope::Scope;
use agentry_core::deadline::{Elapsed, within};
use agentry_core::hooks::{
    AfterTool, BeforeTool, Events, HookStep, Next, Resolver, Terminal, ToolCallRequest,
    ToolDecision, ToolFailed, ToolOutcome,
};
use agentry_core::machine::ToolsRan;
use agentry_core::{
    AgentDef, AgentTool, Content, Decision, Error, Message, PendingApproval, RunMachine, Tool,
    ToolCall, ToolCallRef, ToolCtx, ToolFailure, ToolInfo, ToolResult, ToolSource, panic_message,
    schema_violations,
};
use futures::FutureExt;
use serde_json::Value;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

mod approval;
mod reported;
mod turn;

/// How one call of a turn settled.
pub(crate) enum Settled {
    /// With a result the model will see.
    Done(ToolResult),
    /// Waiting for a person's decision.
    Pending(PendingApproval),
    /// Rejected, and the run stops.
    Stop {
        result: ToolResult,
        reason: String,
        by: Resolver,
    },
    /// A sub-agent call handed to the caller of the run's effects (which delegates them).
    SubAgent(Box<SubAgentRequest>),
}

/// How the calls of a turn settled, and who stopped the run when a person rejected one with a
/// stop (for StoppedByHuman hooks).
pub(crate) struct ToolPhase {
    pub ran: ToolsRan,
    pub stopped_by: Option<Resolver>,
}

/// The result a rejected call gives the model.
fn rejected(call: &ToolCall, reason: &str) -> ToolResult {
    ToolResult::error(
        &call.id,
        &call.name,
        format!("the call was rejected: {reason}"),
    )
}

/// The tool phase of a step, borrowing from its run what the calls read: the agent, the hooks,
/// the runtime's limits, the machine (for the calls settled before a pause), a person's
/// decisions, the calls open for interrupted runs, and the run's tool sources (for
/// sub-agents). Several calls of a turn share it while they run concurrently.
pub(crate) struct ToolCalls<'d> {
    pub def: &'d Arc<AgentDef>,
    pub scope: &'d Scope,
    pub rt: &'d Arc<RuntimeInner>,
    pub machine: &'d RunMachine,
    pub decisions: &'d HashMap<String, Decision>,
    pub open_calls: &'d OpenCalls,
    /// Sub-agent calls are handed to the caller of the run's effects instead of run here.
    pub delegate_sub_agents: bool,
    pub tool_sources: &'d [Arc<dyn ToolSource>],
}

impl Driver {
    /// The tool phase of the run's current step.
    pub(crate) fn tool_calls(&self) -> ToolCalls<'_> {
        ToolCalls {
            def: &self.def,
            scope: &self.scope,
            rt: &self.rt,
            machine: &self.machine,
            decisions: &self.decisions,
            open_calls: &self.open_calls,
            delegate_sub_agents: self.delegate_sub_agents,
            tool_sources: &self.tool_sources,
        }
    }
}

impl ToolCalls<'_> {
    /// One call, start to end. An `Err` is a hook failure that fails the run; everything else the
    /// model should hear about is an error result. Every call streams ToolStarted (with the input
    /// the model sent) and ToolFinished (with the result the model will see).
    pub(crate) async fn tool_call(
        &self,
        turn: &Arc<Message>,
        index: usize,
    ) -> Result<Settled, Error> {
        let call = &turn.tool_calls()[index];
        if let Some(result) = self.machine.settled_result(&call.id) {
            return Ok(Settled::Done(result.clone()));
        }
        let decision = if self.decisions.is_empty() {
            None
        } else {
            self.decisions.get(&call.id)
        };
        // A call a person rejected closes the BeforeTool it had before the run paused.
        let closed = |reason: &str| {
            let input = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            let info = match self.def.find_tool(&call.name) {
                Some(AgentTool::Tool { tool, .. }) => tool.info(),
                _ => None,
            };
            self.after_tool(input, rejected(call, reason), info)
        };
        let approved = match decision {
            Some(Decision::Approve { .. }) => true,
            Some(Decision::Reject { reason, .. }) => {
                let result = closed(reason).await?;
                self.tool_finished(&result);
                return Ok(Settled::Done(result));
            }
            Some(Decision::RejectAndStop { reason, .. }) => {
                let result = closed(reason).await?;
                self.tool_finished(&result);
                return Ok(Settled::Stop {
                    result,
                    reason: reason.clone(),
                    by: Resolver::Person,
                });
            }
            None => false,
        };
        let limits = &self.rt.limits;
        if index >= limits.max_tool_calls_per_turn {
            self.tool_started(call, &Value::Null);
            let result = ToolResult::error(
                &call.id,
                &call.name,
                format!(
                    "not run: the model asked for {} tool calls in one turn and at most {} run (`max_tool_calls_per_turn` under `[limits]` in agentry.toml, `Runtime::max_tool_calls_per_turn` in code); make this call again in a later turn",
                    turn.tool_calls().len(),
                    limits.max_tool_calls_per_turn
                ),
            );
            self.tool_finished(&result);
            return Ok(Settled::Done(result));
        }
        let raw = call.arguments.trim();
        let parsed = if raw.len() > limits.max_tool_input_bytes {
            Err(format!(
                "the arguments of `{}` are {} bytes, over the limit of {} (`max_tool_input_bytes` under `[limits]` in agentry.toml, `Runtime::max_tool_input_bytes` in code); it was not called. Call it again with smaller arguments",
                call.name,
                raw.len(),
                limits.max_tool_input_bytes
            ))
        } else if raw.is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str::<Value>(raw).map_err(|e| {
                format!(
                    "the arguments of `{}` are not valid JSON ({e}); call it again with a JSON object that matches its schema",
                    call.name
                )
            })
        };
        let settled = self.settle(turn, index, parsed, approved).await;
        if self.scope.wants(Events::BEFORE_TOOL | Events::TOOL_FAILED) {
            self.open_calls.close(&call.id, false);
        }
        let settled = settled?;
        match &settled {
            Settled::Done(result) | Settled::Stop { result, .. } => self.tool_finished(result),
            Settled::Pending(_) | Settled::SubAgent(_) => {}
        }
        Ok(settled)
    }

    /// Closes call `index` of `turn`, a sub-agent call handed over as `request`, with how the
    /// sub-agent's run ended: AfterSubAgent or SubAgentFailed, then AfterTool or ToolFailed, as
    /// when it runs here.
    pub(crate) async fn sub_agent_finished(
        &self,
        turn: &Arc<Message>,
        index: usize,
        request: SubAgentRequest,
        outcome: SubAgentOutcome,
    ) -> Result<Settled, Error> {
        let call = &turn.tool_calls()[index];
        let SubAgentRequest { agent, task, input } = request;
        let settled = match self.close_sub_agent(&agent, call, task, outcome).await {
            Ok(outcome) => self.close_call(turn, index, input, None, outcome).await,
            Err(e) => Err(e),
        };
        if self
            .scope
            .wants(Events::BEFORE_TOOL | Events::TOOL_FAILED | Events::SUB_AGENT_FAILED)
        {
            self.open_calls.close(&call.id, false);
        }
        let settled = settled?;
        if let Settled::Done(result) = &settled {
            self.tool_finished(result);
        }
        Ok(settled)
    }

    async fn settle(
        &self,
        turn: &Arc<Message>,
        index: usize,
        parsed: Result<Value, String>,
        approved: bool,
    ) -> Result<Settled, Error> {
        let call = &turn.tool_calls()[index];
        let scope = &self.scope;
        let Some(tool) = self.def.find_tool(&call.name) else {
            match &parsed {
                Ok(input) => self.tool_started(call, input),
                Err(_) => self.tool_started(call, &self.unparsed_input(call)),
            }
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
            return Ok(Settled::Done(ToolResult::error(
                &call.id, &call.name, content,
            )));
        };
        let mut input = match parsed {
            Ok(v) => v,
            Err(content) => {
                self.tool_started(call, &self.unparsed_input(call));
                return Ok(Settled::Done(ToolResult::error(
                    &call.id, &call.name, content,
                )));
            }
        };

        let info = match tool {
            AgentTool::Tool { tool, .. } => tool.info(),
            AgentTool::SubAgent { .. } => None,
        };
        let mut decision = None;
        // A hook allowed the call: it runs without the approval the tool itself wants.
        let mut allowed = false;
        if scope.wants(Events::BEFORE_TOOL) {
            let call = ToolCallRef::in_turn(turn.clone(), index);
            let mut ev = BeforeTool::for_call(call, input).with_info(info.cloned());
            if approved {
                ev = ev.approved();
            }
            if scope.engine.has_event_stream() {
                // Someone watches: trace the chain, to say which hooks rewrote the input.
                let asked = ev.input.clone();
                let (ev, by, steps) = scope.hook_traced(ev).await?;
                let allower = ev
                    .allowed()
                    .map(|reason| (allower(&steps), reason.to_owned()));
                allowed = allower.is_some();
                (decision, input) = ev.into_parts();
                let rewriters = rewriters(&asked, &steps);
                self.hook_decision(
                    &turn.tool_calls()[index],
                    by,
                    rewriters,
                    decision.as_ref(),
                    &asked,
                    &input,
                );
                if let Some((hook, reason)) = allower
                    && decision.is_none()
                {
                    self.hook_allowed(&turn.tool_calls()[index], hook, reason);
                }
            } else {
                let mut slot = Some(ev);
                scope.run_hooks(&mut slot).await?;
                let ev = slot.expect("hooks give the event back");
                allowed = ev.allowed().is_some();
                (decision, input) = ev.into_parts();
            }
            if scope.wants(Events::TOOL_FAILED) {
                // Open until it closes; a run interrupted meanwhile closes it with ToolFailed.
                let call = ToolCallRef::in_turn(turn.clone(), index);
                let open = OpenCall::Tool {
                    call,
                    input: input.clone(),
                };
                self.open_calls.open(&turn.tool_calls()[index].id, open);
            }
        }
        self.tool_started(call, &input);
        let needs_approval = match (&decision, tool) {
            (Some(ToolDecision::NeedsApproval(reason)), _) => Some(reason.clone()),
            (None, AgentTool::Tool { tool, .. })
                if !approved && !allowed && tool.needs_approval() =>
            {
                Some(format!("`{}` needs approval", call.name))
            }
            _ => None,
        };
        if let Some(reason) = needs_approval {
            decision = None;
            // Boxed: rare, and it would otherwise grow every tool call's future.
            match Box::pin(self.ask_approval(call, &input, reason)).await? {
                None => {}
                // A call a hook rejected closes its BeforeTool with AfterTool, like a block.
                Some(Settled::Done(result)) => {
                    return Ok(Settled::Done(self.after_tool(input, result, info).await?));
                }
                Some(Settled::Stop { result, reason, by }) => {
                    let result = self.after_tool(input, result, info).await?;
                    return Ok(Settled::Stop { result, reason, by });
                }
                Some(held @ (Settled::Pending(_) | Settled::SubAgent(_))) => return Ok(held),
            }
        }
        let outcome = match decision {
            Some(ToolDecision::Block(reason)) => {
                Ok(ToolResult::error(&call.id, &call.name, reason))
            }
            Some(ToolDecision::Mock(content)) => Ok(ToolResult {
                mocked: true,
                ..ToolResult::ok(&call.id, &call.name, content)
            }),
            // Approved (a request for approval was answered above).
            None | Some(ToolDecision::NeedsApproval(_)) => {
                if let Some(problems) = schema_violations(tool.validator(), &input) {
                    // Not called; like any failed call, it closes its BeforeTool with ToolFailed.
                    Err(ToolFailure::new(format!(
                        "the arguments of `{}` do not match its schema: {problems}; call it again with arguments that match",
                        call.name
                    )))
                } else {
                    // AfterTool and ToolFailed hooks see the input after the call: when some want it,
                    // the tool reads it in place; otherwise the tool takes it.
                    let keep = scope.wants(Events::AFTER_TOOL | Events::TOOL_FAILED);
                    let outcome = match tool {
                        AgentTool::Tool { tool, .. } => {
                            let arg = if keep {
                                ToolInput::Borrowed(&input)
                            } else {
                                ToolInput::Owned(std::mem::take(&mut input))
                            };
                            self.invoke_within_limit(tool, turn, index, arg)
                                .await
                                .map(|out| {
                                    ToolResult::ok(&call.id, &call.name, self.capped(out.content))
                                })
                        }
                        AgentTool::SubAgent { agent, .. } if self.delegate_sub_agents => {
                            match self.open_sub_agent(agent, call, &input).await? {
                                Ok(task) => {
                                    scope.flush().await?;
                                    let request = SubAgentRequest {
                                        agent: agent.name.to_string(),
                                        task,
                                        input,
                                    };
                                    return Ok(Settled::SubAgent(Box::new(request)));
                                }
                                Err(blocked) => blocked,
                            }
                        }
                        AgentTool::SubAgent { agent, .. } => {
                            self.sub_agent(agent, call, &input).await?
                        }
                    };
                    scope.flush().await?;
                    outcome
                }
            }
        };
        self.close_call(turn, index, input, info, outcome).await
    }

    /// Closes call `index` of `turn` with its outcome: AfterTool hooks see a result, ToolFailed
    /// hooks a failure (and may recover or rewrite it).
    async fn close_call(
        &self,
        turn: &Arc<Message>,
        index: usize,
        input: Value,
        info: Option<&Arc<ToolInfo>>,
        outcome: Result<ToolResult, ToolFailure>,
    ) -> Result<Settled, Error> {
        let call = &turn.tool_calls()[index];
        let scope = &self.scope;
        match outcome {
            Ok(result) => Ok(Settled::Done(self.after_tool(input, result, info).await?)),
            Err(failure) => {
                if let Some(hook_error) = failure.hook_error() {
                    return Err(Error::Hook(hook_error.clone()));
                }
                if scope.wants(Events::TOOL_FAILED) {
                    let call_ref = ToolCallRef::in_turn(turn.clone(), index);
                    let ev = ToolFailed::for_call(call_ref, input, failure.message().to_string())
                        .with_info(info.cloned());
                    let ev = scope.hook(ev).await?;
                    if let Some(content) = ev.recovery() {
                        return Ok(Settled::Done(ToolResult::ok(&call.id, &call.name, content)));
                    }
                    if let Some(message) = ev.rewritten_error() {
                        let result = ToolResult::error(&call.id, &call.name, message);
                        return Ok(Settled::Done(result));
                    }
                }
                Ok(Settled::Done(ToolResult::error(
                    &call.id,
                    &call.name,
                    failure.message(),
                )))
            }
        }
    }

    /// Runs AfterTool hooks on a call's result, when some want it.
    async fn after_tool(
        &self,
        input: Value,
        result: ToolResult,
        info: Option<&Arc<ToolInfo>>,
    ) -> Result<ToolResult, Error> {
        if !self.scope.wants(Events::AFTER_TOOL) {
            return Ok(result);
        }
        let mut slot = Some(AfterTool::new(input, result).with_info(info.cloned()));
        self.scope.run_hooks(&mut slot).await?;
        Ok(slot.expect("hooks give the event back").into_result())
    }

    /// Calls a tool within its time limit (its own, or the runtime's default): a call that
    /// overruns it is dropped and fails with an error that names the limit.
    /// A tool's output with its text cut at the result limit, and a note to the model.
    fn capped(&self, mut content: Content) -> Content {
        let max = self.rt.limits.max_tool_result_bytes;
        if content.text_len() > max {
            let len = content.text_len();
            content.cut_text(
                max,
                &format!(
                    "[the result was {len} bytes and was cut at {max} (`max_tool_result_bytes` under `[limits]` in agentry.toml, `Runtime::max_tool_result_bytes` in code); ask for less, or for a part at a time]"
                ),
            );
        }
        content
    }

    /// What ToolStarted reports as the input of a call whose arguments were not parsed: the
    /// arguments as the model sent them, or, over the input limit, how long they were.
    fn unparsed_input(&self, call: &ToolCall) -> Value {
        let len = call.arguments.len();
        if len > self.rt.limits.max_tool_input_bytes {
            Value::String(format!("({len} bytes of arguments, over the input limit)"))
        } else {
            Value::String(call.arguments.clone())
        }
    }

    async fn invoke_within_limit(
        &self,
        tool: &Arc<dyn Tool>,
        turn: &Arc<Message>,
        index: usize,
        input: ToolInput<'_>,
    ) -> ToolOutcome {
        let (limit, which) = match tool.timeout() {
            Some(limit) => (limit, "its own time limit (`.timeout(..)`)"),
            None => (
                self.rt.limits.tool_timeout,
                "the default tool timeout (`tool_timeout` under `[limits]` in agentry.toml, `Runtime::tool_timeout` in code)",
            ),
        };
        within(limit, self.invoke(tool.clone(), turn, index, input))
            .await
            .unwrap_or_else(|Elapsed| {
                Err(ToolFailure::new(format!(
                    "tool `{}` did not finish within {limit:?}, {which}; it was stopped. Raise the limit for slow tools, or make the call smaller",
                    tool.spec().name
                )))
            })
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
        let ctx = ToolCtx::for_turn(self.scope.context().clone(), turn.clone(), index);
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
        let req = ToolCallRequest::new(call.id.clone(), call.name.clone(), input.into_owned());
        Next::start(
            chain,
            terminal,
            self.scope.context().clone(),
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

/// The hooks of a traced BeforeTool chain that changed the input, in the order they ran, as
/// `a, b` (a hook that saw the event read-only or failed changed nothing that stands).
/// The hook that allowed the call: the first whose step left it allowed.
fn allower(steps: &[HookStep<BeforeTool>]) -> String {
    steps
        .iter()
        .find(|s| !s.read_only && s.failure.is_none() && s.after.allowed().is_some())
        .map(|s| s.hook.to_string())
        .unwrap_or_default()
}

fn rewriters(asked: &Value, steps: &[HookStep<BeforeTool>]) -> String {
    let mut names = Vec::new();
    let mut before = asked;
    for step in steps {
        if step.read_only || step.failure.is_some() {
            continue;
        }
        if &step.after.input != before {
            names.push(step.hook.to_string());
        }
        before = &step.after.input;
    }
    names.join(", ")
}
