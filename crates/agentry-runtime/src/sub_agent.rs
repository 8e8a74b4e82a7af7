//! Sub-agents: an agent called as a tool runs as a child run that inherits its parent's hooks
//! (the parent's wrap the child's) and tool sources, streams its events on the parent's stream
//! under its agent path, and is cancelled with its parent.

use super::driver::{Driver, Start, scoped_hooks};
use super::effects::SubAgentOutcome;
use super::nesting;
use super::open_calls::OpenCall;
use super::tool_call::ToolCalls;
use agentry_core::hooks::{AfterSubAgent, BeforeSubAgent, Events, SubAgentFailed};
use agentry_core::{AgentDef, Error, ToolCall, ToolFailure, ToolResult};
use serde_json::Value;
use std::sync::Arc;

impl ToolCalls<'_> {
    /// Runs a sub-agent for a tool call. The outer `Err` fails the parent run: a hook failure of
    /// the parent, or of the child (hooks enforce policy, so a child cannot route around them);
    /// the inner one is a failure the parent model hears about (after SubAgentFailed hooks).
    pub(crate) async fn sub_agent(
        &self,
        child: &Arc<AgentDef>,
        call: &ToolCall,
        input: &Value,
    ) -> Result<Result<ToolResult, ToolFailure>, Error> {
        let outcome = self.sub_agent_call(child, call, input).await;
        if self
            .scope
            .wants(Events::BEFORE_SUB_AGENT | Events::SUB_AGENT_FAILED)
        {
            self.open_calls.close(&call.id, true);
        }
        outcome
    }

    async fn sub_agent_call(
        &self,
        child: &Arc<AgentDef>,
        call: &ToolCall,
        input: &Value,
    ) -> Result<Result<ToolResult, ToolFailure>, Error> {
        let task = match self.open_sub_agent(child, call, input).await? {
            Ok(task) => task,
            Err(blocked) => return Ok(blocked),
        };
        let driver = self.child_driver(child)?;
        let child_run_id = driver.scope.context().run_id().to_string();
        // On a task of its own: however deep sub-agents nest, the stack does not grow.
        let outcome = match nesting::drive_nested(driver, Start::New(task.clone().into())).await {
            Ok(done) => SubAgentOutcome::of_run(&child.name, child_run_id, done.output, &done.stop),
            // A hook's failure fails the parent too (hooks enforce policy), and so does nesting
            // past the limit (an agent that calls itself would otherwise go on at every level).
            Err(e @ (Error::Hook(_) | Error::DepthLimit { .. })) => return Err(e),
            Err(e) => SubAgentOutcome::failed(&child.name, &e),
        };
        self.close_sub_agent(&child.name, call, task, outcome).await
    }

    /// Opens a sub-agent call: BeforeSubAgent hooks may rewrite its task or block it. The task
    /// to run, or (blocked) the call's outcome.
    pub(crate) async fn open_sub_agent(
        &self,
        child: &Arc<AgentDef>,
        call: &ToolCall,
        input: &Value,
    ) -> Result<Result<String, Result<ToolResult, ToolFailure>>, Error> {
        let scope = &self.scope;
        let mut task = input
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if scope.wants(Events::BEFORE_SUB_AGENT) {
            let ev = BeforeSubAgent::new(child.name.to_string(), call.id.clone(), task);
            let ev = scope.hook(ev).await?;
            task = ev.input.clone();
            if let Some(reason) = ev.blocked() {
                // Closed like a failure: SubAgentFailed hooks may still answer in its place.
                let outcome = self
                    .sub_agent_failed(&child.name, call, task, reason.to_string())
                    .await?;
                return Ok(Err(outcome));
            }
            if scope.wants(Events::SUB_AGENT_FAILED) {
                let open = OpenCall::SubAgent {
                    agent: child.name.to_string(),
                    input: task.clone(),
                };
                self.open_calls.open(&call.id, open);
            }
        }
        Ok(Ok(task))
    }

    /// Closes a sub-agent call with how its run ended: AfterSubAgent hooks see an answer,
    /// SubAgentFailed hooks a failure (and may answer in its place).
    pub(crate) async fn close_sub_agent(
        &self,
        child: &str,
        call: &ToolCall,
        task: String,
        outcome: SubAgentOutcome,
    ) -> Result<Result<ToolResult, ToolFailure>, Error> {
        match outcome {
            SubAgentOutcome::Answered { run_id, output } => {
                let output = if self.scope.wants(Events::AFTER_SUB_AGENT) {
                    let ev = AfterSubAgent::new(child.to_string(), run_id, task, output);
                    self.scope.hook(ev).await?.output
                } else {
                    output
                };
                Ok(Ok(ToolResult::ok(&call.id, &call.name, output)))
            }
            SubAgentOutcome::Failed(error) => self.sub_agent_failed(child, call, task, error).await,
        }
    }

    /// A sub-agent call that failed (or was blocked): SubAgentFailed hooks may recover with an
    /// output; otherwise the parent model hears `error`.
    async fn sub_agent_failed(
        &self,
        child: &str,
        call: &ToolCall,
        task: String,
        error: String,
    ) -> Result<Result<ToolResult, ToolFailure>, Error> {
        if self.scope.wants(Events::SUB_AGENT_FAILED) {
            let ev = SubAgentFailed::new(child.to_string(), task, error.clone());
            let ev = self.scope.hook(ev).await?;
            if let Some(output) = ev.recovery() {
                return Ok(Ok(ToolResult::ok(&call.id, &call.name, output)));
            }
            if let Some(message) = ev.rewritten_error() {
                return Ok(Err(ToolFailure::new(message)));
            }
        }
        Ok(Err(ToolFailure::new(error)))
    }

    fn child_driver(&self, child: &Arc<AgentDef>) -> Result<Box<Driver>, Error> {
        let parent = &self.scope.engine;
        let depth = nesting::nested_depth(parent, self.rt.limits.max_depth)?;
        let hooks = scoped_hooks(&self.scope.hooks, &[&child.hooks]);
        let spec = parent.child_spec(
            uuid::Uuid::new_v4().to_string(),
            child.name.clone(),
            child.initial_state.clone_box(),
            depth,
        );
        let mut driver = Driver::new(child, self.rt, hooks, spec)?;
        // The parent run's tool sources (its MCP servers) serve the child too, as its hooks do.
        driver.tool_sources = self.tool_sources.to_vec();
        Ok(driver)
    }
}
