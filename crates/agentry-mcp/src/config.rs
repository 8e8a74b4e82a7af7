//! The configuration of MCP servers, in the `.mcp.json` format Claude Code and Claude Desktop
//! read, with a few optional agentry fields.

use crate::error::McpError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The default time limit of one call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time limit of starting a server and its handshake.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The default cap on one result's size (bytes of its content).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;
/// The default time a stdio server is given to exit after its stdin is closed, and again after
/// SIGTERM, before it is killed.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The variables of agentry's own environment a stdio server inherits (as the official MCP
/// SDKs pass them): enough to find programs and a home directory, and the locale. Nothing
/// else reaches a server (no provider key, no token) unless its `env` sets it or its
/// `inheritEnv` names it.
pub const DEFAULT_INHERITED_ENV: [&str; 10] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

/// A set of MCP servers by name: the contents of a `.mcp.json` file,
/// `{"mcpServers": {"name": {...}}}`.
///
/// ```
/// use agentry_mcp::McpConfig;
/// let config: McpConfig = serde_json::from_str(r#"{"mcpServers": {
///     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
///     "remote": {"type": "http", "url": "https://example.com/mcp",
///                "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
/// }}"#).unwrap();
/// assert_eq!(config.mcp_servers.len(), 2);
/// assert!(config.mcp_servers["remote"].is_http());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    /// The servers, by name (the name is the `<server>` of `mcp__<server>__<tool>`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, ServerSpec>,
}

impl McpConfig {
    /// Reads a `.mcp.json` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, McpError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| McpError::Config {
            origin: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a `.mcp.json` file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, McpError> {
        let config: McpConfig = serde_json::from_str(text).map_err(|e| McpError::Config {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        for (name, spec) in &config.mcp_servers {
            spec.check(name)?;
        }
        Ok(config)
    }

    /// Adds a server.
    pub fn server(mut self, name: impl Into<String>, spec: ServerSpec) -> Self {
        self.mcp_servers.insert(name.into(), spec);
        self
    }
}

/// How a server is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// A child process speaking JSON-RPC on its stdin and stdout (the default).
    #[default]
    Stdio,
    /// A Streamable HTTP endpoint.
    Http,
}

/// One server, as `.mcp.json` declares it: `{command, args, env}` for a child process, or
/// `{"type": "http", url, headers}` for a Streamable HTTP endpoint. `${VAR}` in the args, the
/// environment, the URL and the headers is replaced by the variable's value each time the
/// server is started; the value is never stored, logged or put in events, so keep secrets in
/// templates.
///
/// The other fields are agentry's, all optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSpec {
    /// `stdio` (the default when `command` is given) or `http`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ServerKind>,
    /// The program to start (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its environment besides the few variables it inherits ([`DEFAULT_INHERITED_ENV`]), as
    /// templates (stdio).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// More variables it inherits from agentry's environment, by name (stdio), e.g.
    /// `HTTPS_PROXY`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherit_env: Vec<String>,
    /// Its working directory (stdio; the current directory when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint (http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request (http), as templates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How long one call may take, in milliseconds (60 000 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Time limits of single tools, in milliseconds, by the server's tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_timeouts_ms: BTreeMap<String, u64>,
    /// How long starting the server and its handshake may take, in milliseconds (30 000 by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// The cap on one result's size in bytes (1 MiB by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_bytes: Option<usize>,
    /// When not empty, only these of the server's tools are offered (names as the server gives
    /// them; `*` matches any run of characters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// These of the server's tools are never offered (deny wins over allow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_tools: Vec<String>,
    /// When true, a run cannot go on without this server: if it cannot be started or listed,
    /// the run fails. When false (the default), its tools are left out, a warning says why, and
    /// it is tried again (with backoff) before later steps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// How long a stdio server is given to exit after its stdin is closed at shutdown, and
    /// again after SIGTERM, before it is killed, in milliseconds (2 000 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_ms: Option<u64>,
}

impl ServerSpec {
    /// A server started as a child process.
    pub fn stdio(command: impl Into<String>) -> Self {
        ServerSpec {
            command: Some(command.into()),
            ..Default::default()
        }
    }

    /// A Streamable HTTP server.
    pub fn http(url: impl Into<String>) -> Self {
        ServerSpec {
            kind: Some(ServerKind::Http),
            url: Some(url.into()),
            ..Default::default()
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an environment variable (a template).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Lets it inherit the variable `name` from agentry's environment.
    pub fn inherit_env(mut self, name: impl Into<String>) -> Self {
        self.inherit_env.push(name.into());
        self
    }

    /// Makes it required: a run fails when it cannot be started or listed.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Sets how long it is given to exit at shutdown (after its stdin is closed, and again
    /// after SIGTERM).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace_ms = Some(grace.as_millis() as u64);
        self
    }

    /// Adds a header (a template: keep secrets as `${VAR}`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the time limit of one call.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout_ms = Some(limit.as_millis() as u64);
        self
    }

    /// Sets the time limit of one tool's calls.
    pub fn tool_timeout(mut self, tool: impl Into<String>, limit: Duration) -> Self {
        self.tool_timeouts_ms
            .insert(tool.into(), limit.as_millis() as u64);
        self
    }

    /// Sets the cap on one result's size.
    pub fn max_result_bytes(mut self, cap: usize) -> Self {
        self.max_result_bytes = Some(cap);
        self
    }

    /// Offers only the tools matching `pattern` (may be given several times).
    pub fn allow_tool(mut self, pattern: impl Into<String>) -> Self {
        self.allowed_tools.push(pattern.into());
        self
    }

    /// Never offers the tools matching `pattern`.
    pub fn deny_tool(mut self, pattern: impl Into<String>) -> Self {
        self.denied_tools.push(pattern.into());
        self
    }

    /// True for a Streamable HTTP server.
    pub fn is_http(&self) -> bool {
        self.kind == Some(ServerKind::Http)
            || (self.kind.is_none() && self.url.is_some() && self.command.is_none())
    }

    /// The time limit of a call of `tool`.
    pub fn call_timeout(&self, tool: &str) -> Duration {
        self.tool_timeouts_ms
            .get(tool)
            .or(self.timeout_ms.as_ref())
            .map(|ms| Duration::from_millis(*ms))
            .unwrap_or(DEFAULT_CALL_TIMEOUT)
    }

    /// The time limit of the start and handshake.
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }

    /// The time it is given to exit at shutdown, per stage.
    pub fn shutdown_grace_period(&self) -> Duration {
        self.shutdown_grace_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_SHUTDOWN_GRACE)
    }

    /// The cap on a result's size.
    pub fn result_cap(&self) -> usize {
        self.max_result_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES)
    }

    /// True when the server's tool `name` is offered, per the allow and deny lists.
    pub fn offers(&self, name: &str) -> bool {
        if self.denied_tools.iter().any(|p| glob_match(p, name)) {
            return false;
        }
        self.allowed_tools.is_empty() || self.allowed_tools.iter().any(|p| glob_match(p, name))
    }

    /// Checks that the spec can be used, naming `server` in the error.
    pub fn check(&self, server: &str) -> Result<(), McpError> {
        let bad = |message: &str| McpError::Spec {
            server: server.to_string(),
            message: message.to_string(),
        };
        if server.is_empty()
            || !server
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad(
                "its name must be letters, digits, `-` and `_` only (it becomes part of tool names `mcp__<server>__<tool>`)",
            ));
        }
        if server.contains("__") {
            return Err(bad(
                "its name must not contain `__` (the separator in `mcp__<server>__<tool>`)",
            ));
        }
        if self.is_http() {
            if self.url.as_deref().is_none_or(str::is_empty) {
                return Err(bad("an http server needs a `url`"));
            }
        } else if self.command.as_deref().is_none_or(str::is_empty) {
            return Err(bad(
                "a stdio server needs a `command` (or `\"type\": \"http\"` and a `url`)",
            ));
        }
        Ok(())
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    if parts.is_empty() {
        return rest.is_empty();
    }
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("echo", "echo"));
        assert!(!glob_match("echo", "echoes"));
        assert!(glob_match("get_*", "get_tiny_image"));
        assert!(glob_match("*image*", "get_tiny_image"));
        assert!(!glob_match("*image", "images_x"));
        assert!(glob_match("*", "anything"));
    }

    #[test]
    fn lists() {
        let spec = ServerSpec::stdio("x")
            .allow_tool("get_*")
            .deny_tool("get_env");
        assert!(spec.offers("get_sum"));
        assert!(!spec.offers("get_env"));
        assert!(!spec.offers("echo"));
    }
}
