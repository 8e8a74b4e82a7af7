//! One MCP tool as an agentry tool named `mcp__<server>__<tool>`.

use crate::content::map_result;
use crate::server::Server;
use agentry::{Tool, ToolAnnotations, ToolCtx, ToolFailure, ToolInfo, ToolOutput, ToolSpec};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How much longer than its own limit the runtime lets a call run, so the server's limit (whose
/// error names the server and sends `notifications/cancelled`) fires first.
const GRACE: Duration = Duration::from_secs(1);

/// The agentry name of tool `tool` of server `server`: `mcp__<server>__<tool>`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// A tool of an MCP server, callable like any agentry tool: its calls go through the run's
/// hooks (BeforeTool, around-tool middleware, AfterTool, ToolFailed), its arguments are validated
/// against the server's input schema, and its [`ToolInfo`] gives the server's name, the tool's
/// annotations (every hint filled in by the MCP specification's defaults, so a tool that says
/// nothing counts as destructive) and its `outputSchema`. A result's `structuredContent` is
/// validated against that schema; one that does not match, or is missing, is a tool failure
/// naming the server, the tool and what is wrong.
pub struct McpTool {
    server: Weak<Server>,
    server_name: String,
    remote: String,
    spec: ToolSpec,
    info: Arc<ToolInfo>,
    timeout: Duration,
    cap: usize,
    output: Option<Arc<jsonschema::Validator>>,
}

impl McpTool {
    pub(crate) fn new(server: &Arc<Server>, tool: rmcp::model::Tool) -> Self {
        let remote = tool.name.to_string();
        let mut parameters = Value::Object((*tool.input_schema).clone());
        if parameters.get("type").is_none() {
            parameters["type"] = Value::String("object".into());
        }
        let annotations = match &tool.annotations {
            Some(a) => ToolAnnotations {
                title: a.title.clone(),
                read_only_hint: a.read_only_hint,
                destructive_hint: a.destructive_hint,
                idempotent_hint: a.idempotent_hint,
                open_world_hint: a.open_world_hint,
            },
            None => ToolAnnotations::default(),
        }
        .with_defaults();
        let output_schema = tool.output_schema.map(|s| Value::Object((*s).clone()));
        let output = output_schema.as_ref().and_then(|schema| {
            match jsonschema::validator_for(schema) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(server = %server.name, tool = %remote, error = %e, "the tool's outputSchema is not a valid JSON Schema; its structured results are not checked");
                    None
                }
            }
        });
        McpTool {
            server: Arc::downgrade(server),
            server_name: server.name.clone(),
            spec: ToolSpec {
                name: tool_name(&server.name, &remote),
                description: tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .unwrap_or_default()
                    .to_string(),
                parameters,
            },
            info: Arc::new(ToolInfo {
                source: Some(server.name.clone()),
                annotations: Some(annotations),
                output_schema,
            }),
            timeout: server.spec.call_timeout(&remote),
            cap: server.spec.result_cap(),
            output,
            remote,
        }
    }

    /// The server's name for the tool.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// The JSON Schema of its `structuredContent`, when the server gives one (also on its
    /// [`ToolInfo`]).
    pub fn output_schema(&self) -> Option<&Value> {
        self.info.output_schema.as_ref()
    }

    /// Checks a successful result's `structuredContent` against the tool's `outputSchema`.
    fn check_structured(&self, result: &rmcp::model::CallToolResult) -> Result<(), ToolFailure> {
        let Some(validator) = &self.output else {
            return Ok(());
        };
        if result.is_error == Some(true) {
            return Ok(());
        }
        let what = format!(
            "tool `{}` of MCP server `{}`",
            self.remote, self.server_name
        );
        let Some(structured) = &result.structured_content else {
            return Err(ToolFailure::new(format!(
                "{what} declares an outputSchema but returned no structuredContent; the server must give its result as structured content too"
            )));
        };
        match agentry::schema_violations(validator, structured) {
            None => Ok(()),
            Some(violations) => Err(ToolFailure::new(format!(
                "{what} returned structuredContent that does not match its outputSchema: {violations}"
            ))),
        }
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            let Some(server) = self.server.upgrade() else {
                return Err(ToolFailure::new(format!(
                    "MCP server `{}` was shut down; its tools cannot be called any more",
                    self.server_name
                )));
            };
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => Some(serde_json::Map::from_iter([("input".to_string(), other)])),
            };
            let result = server
                .call(&self.remote, arguments, &ctx, self.timeout)
                .await?;
            self.check_structured(&result)?;
            map_result(&self.server_name, &self.remote, result, self.cap)
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout + GRACE)
    }

    fn info(&self) -> Option<&Arc<ToolInfo>> {
        Some(&self.info)
    }
}
