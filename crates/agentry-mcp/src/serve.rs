//! agentry agents served as an MCP server: each agent is a tool whose input is the prompt.

use crate::error::McpError;
use agentry::{Agent, AgentState, RunEvent, Runtime, StopReason};
use futures::StreamExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;

/// What one served call needs: the prompt, the client's cancellation, and where progress goes.
struct Call {
    prompt: String,
    cancel: tokio_util::sync::CancellationToken,
    progress: Box<dyn Fn(String) + Send + Sync>,
}

/// Runs one agent for a call; type-erased over the agent's state and output types.
type Runner = Arc<dyn Fn(Runtime, Call) -> BoxFuture<'static, CallToolResult> + Send + Sync>;

struct Served {
    tool: Tool,
    run: Runner,
}

/// agentry agents as the tools of an MCP server (on stdio, or any rmcp transport).
///
/// Each agent is a tool named after it whose input is `{"prompt": string}`; its output schema
/// is the agent's structured output type's, when it has one. A call runs the agent on the
/// server's [`Runtime`] with all its hooks; each step and tool call is reported as a progress
/// notification (when the client asked for progress); the client's `notifications/cancelled`
/// cancels the run. A run that waits for a person's approval answers with its run id and the
/// pending calls (`structuredContent.status` is `"awaiting_approval"`), to be decided with
/// `Runtime::decide` and the same store.
///
/// ```no_run
/// use agentry::prelude::*;
/// use agentry_mcp::AgentServer;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder("greeter")
///     .description("Greets whoever the prompt names.")
///     .model(ScriptedModel::new().text("Hello!"))
///     .build()?;
/// AgentServer::new(Runtime::new()).agent(agent).serve_stdio().await?;
/// # Ok(()) }
/// ```
pub struct AgentServer {
    runtime: Runtime,
    name: String,
    agents: Vec<Served>,
}

impl AgentServer {
    /// A server with no agents yet; runs execute on `runtime` (its hooks, store and limits).
    pub fn new(runtime: Runtime) -> Self {
        AgentServer {
            runtime,
            name: "agentry".into(),
            agents: Vec::new(),
        }
    }

    /// The name the server gives clients (`agentry` by default).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Serves `agent` as a tool named after it.
    pub fn agent<S, O>(mut self, agent: Agent<S, O>) -> Self
    where
        S: AgentState,
        O: Serialize + DeserializeOwned + Send + 'static,
    {
        let def = agent.def().clone();
        let description = def
            .description
            .clone()
            .or_else(|| def.instructions.as_deref().map(str::to_string))
            .unwrap_or_else(|| format!("Runs the `{}` agent on a prompt.", def.name));
        let input = json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The task for the agent."}},
            "required": ["prompt"],
        });
        let mut tool = Tool::new(
            def.name.to_string(),
            description,
            Arc::new(input.as_object().cloned().unwrap_or_default()),
        );
        if let Some(output) = &def.output
            && let Some(schema) = output.schema.as_object()
            && schema.get("type").and_then(Value::as_str) == Some("object")
        {
            tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
        }
        let structured = def.output.is_some();
        let run: Runner = Arc::new(move |runtime, call| {
            let agent = agent.clone();
            Box::pin(run_agent(runtime, agent, call, structured))
        });
        self.agents.push(Served { tool, run });
        self
    }

    /// Serves on this process's stdin and stdout until the client disconnects (see
    /// [`process_stdio`](crate::process_stdio)).
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(crate::process_stdio()).await
    }

    /// Serves on any rmcp transport until the client disconnects.
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), McpError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = ServiceExt::serve(self, transport)
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        Ok(())
    }
}

async fn run_agent<S, O>(
    runtime: Runtime,
    agent: Agent<S, O>,
    call: Call,
    structured: bool,
) -> CallToolResult
where
    S: AgentState,
    O: Serialize + DeserializeOwned + Send + 'static,
{
    let mut handle = runtime.run(&agent, call.prompt).start();
    let run_id = handle.run_id().to_string();
    let cancel = handle.cancellation();
    let client_cancel = call.cancel.clone();
    let watch = tokio::spawn(async move {
        client_cancel.cancelled().await;
        cancel.cancel();
    });
    while let Some(event) = handle.events().next().await {
        let note = match &event {
            RunEvent::StepStarted { step, .. } => Some(format!("step {step} started")),
            RunEvent::ToolStarted { name, .. } => Some(format!("calling tool `{name}`")),
            RunEvent::ToolFinished { result, .. } => Some(format!(
                "tool `{}` {}",
                result.name,
                if result.is_error {
                    "failed"
                } else {
                    "finished"
                }
            )),
            _ => None,
        };
        if let Some(note) = note {
            (call.progress)(note);
        }
    }
    let result = handle.result().await;
    watch.abort();
    match result {
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the run {run_id} failed: {e}"
        ))]),
        Ok(out) => match &out.stop {
            StopReason::FinalAnswer => {
                let value = out
                    .output
                    .as_ref()
                    .and_then(|o| serde_json::to_value(o).ok());
                match value {
                    Some(value) if structured => {
                        let mut result = CallToolResult::structured(value);
                        result.content = vec![ContentBlock::text(out.text.clone())];
                        result
                    }
                    Some(Value::String(text)) => {
                        CallToolResult::success(vec![ContentBlock::text(text)])
                    }
                    _ => CallToolResult::success(vec![ContentBlock::text(out.text.clone())]),
                }
            }
            StopReason::AwaitingApproval { pending } => {
                let calls: Vec<String> = pending
                    .iter()
                    .map(|p| format!("`{}` ({}): {}", p.tool, p.call_id, p.reason))
                    .collect();
                let text = format!(
                    "The run {} is paused: it waits for a person's approval of {}. Decide with `Runtime::decide` on run id {}.",
                    out.run_id,
                    calls.join(", "),
                    out.run_id
                );
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(json!({
                    "status": "awaiting_approval",
                    "run_id": out.run_id,
                    "pending": pending,
                }));
                result
            }
            StopReason::Cancelled => CallToolResult::error(vec![ContentBlock::text(format!(
                "the run {run_id} was cancelled"
            ))]),
            other => CallToolResult::error(vec![ContentBlock::text(format!(
                "the run {run_id} stopped without an answer: {other}"
            ))]),
        },
    }
}

impl ServerHandler for AgentServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.agents.iter().map(|a| a.tool.clone()).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(served) = self.agents.iter().find(|a| a.tool.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("there is no agent named `{}`", request.name),
                None,
            ));
        };
        let prompt = match request.arguments.as_ref().and_then(|a| a.get("prompt")) {
            Some(Value::String(prompt)) => prompt.clone(),
            _ => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    "the arguments need a string `prompt`: {\"prompt\": \"...\"}",
                )])
                .into());
            }
        };
        // Progress goes out in order, before the result.
        let (progress, forwarder): (Box<dyn Fn(String) + Send + Sync>, _) =
            match context.meta.get_progress_token() {
                Some(token) => {
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                    let peer = context.peer.clone();
                    let forwarder = tokio::spawn(async move {
                        let mut n = 0u32;
                        while let Some(message) = rx.recv().await {
                            n += 1;
                            let param = ProgressNotificationParam::new(token.clone(), f64::from(n))
                                .with_message(message);
                            let _ = peer.notify_progress(param).await;
                        }
                    });
                    (
                        Box::new(move |message| {
                            let _ = tx.send(message);
                        }),
                        Some(forwarder),
                    )
                }
                None => (Box::new(|_| {}), None),
            };
        let call = Call {
            prompt,
            cancel: context.ct.clone(),
            progress,
        };
        let result = (served.run)(self.runtime.clone(), call).await;
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        Ok(result.into())
    }
}
