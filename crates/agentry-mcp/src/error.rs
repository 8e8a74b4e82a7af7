//! The crate's one error type.

use std::time::Duration;

/// What went wrong with an MCP server or its configuration. Every message names the server and
/// says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration could not be read.
    #[error(
        "the MCP configuration {origin} could not be read: {message}; fix it to match `.mcp.json`'s format: {{\"mcpServers\": {{\"name\": {{\"command\": ..., \"args\": [...]}}}}}}"
    )]
    Config {
        /// Where it came from (a path, or "given").
        origin: String,
        /// Why.
        message: String,
    },
    /// A server's spec is not usable (a bad name, URL or header).
    #[error("MCP server `{server}` is misconfigured: {message}")]
    Spec {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// A `${VAR}` template names a variable that is not set.
    #[error(
        "MCP server `{server}` needs the environment variable `{var}` (named in its {place}); set it before the server is used"
    )]
    MissingVar {
        /// The server.
        server: String,
        /// The variable.
        var: String,
        /// Where the template is (e.g. `header Authorization`).
        place: String,
    },
    /// The server could not be started or reached.
    #[error(
        "MCP server `{server}` could not be started: {message}{}",
        tail(stderr)
    )]
    Start {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// Initialization (the handshake) failed, e.g. no protocol version in common.
    #[error(
        "MCP server `{server}` failed to initialize: {message}{}",
        tail(stderr)
    )]
    Initialize {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The server did not answer in time.
    #[error(
        "MCP server `{server}` did not answer `{what}` within {limit:?}; it was sent notifications/cancelled. Raise the server's `timeout` (or the tool's) if it is slow"
    )]
    Timeout {
        /// The server.
        server: String,
        /// The request.
        what: String,
        /// The limit.
        limit: Duration,
    },
    /// The server went away (exited, crashed, closed the connection) with a request in flight.
    #[error(
        "MCP server `{server}` went away during `{what}` ({message}); {}{}",
        again(*process),
        tail(stderr)
    )]
    Gone {
        /// The server.
        server: String,
        /// The request.
        what: String,
        /// What is known of why: how its process ended (exit status or signal) when it did.
        message: String,
        /// The last lines it wrote to stderr.
        stderr: String,
        /// True for a server this side starts as a process (stdio), false for an endpoint.
        process: bool,
    },
    /// The server broke the protocol (output that is not JSON-RPC, an unexpected answer).
    #[error(
        "MCP server `{server}` broke the protocol: {message}; {}{}",
        again(*process),
        tail(stderr)
    )]
    Protocol {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The last lines it wrote to stderr.
        stderr: String,
        /// True for a server this side starts as a process (stdio), false for an endpoint.
        process: bool,
    },
    /// The server answered with a JSON-RPC error.
    #[error(
        "MCP server `{server}` answered `{what}` with error {code}{}: {message}{}",
        code_name(*code),
        data.as_deref().map(|d| format!(" (data: {d})")).unwrap_or_default()
    )]
    Server {
        /// The server.
        server: String,
        /// The request.
        what: String,
        /// The JSON-RPC error code (e.g. -32602, invalid params).
        code: i32,
        /// The error's message.
        message: String,
        /// The error's `data`, as JSON text (shortened when long), when it has some.
        data: Option<String>,
    },
    /// A result was larger than the cap.
    #[error(
        "MCP server `{server}` returned {size} bytes for `{tool}`, over the cap of {cap} bytes; ask for less (narrower arguments), or raise the server's `maxResultBytes`"
    )]
    TooLarge {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The result's size.
        size: usize,
        /// The cap.
        cap: usize,
    },
    /// Serving agents over MCP failed.
    #[error("serving agents over MCP failed: {0}")]
    Serve(String),
}

impl McpError {
    /// The JSON-RPC error code of a server's error answer.
    pub fn code(&self) -> Option<i32> {
        match self {
            McpError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// What happens next to a server that went away or broke the protocol.
fn again(process: bool) -> &'static str {
    if process {
        "it is started again when next used"
    } else {
        "it is connected to again when next used"
    }
}

/// ` (invalid params)` for the codes JSON-RPC and MCP define.
fn code_name(code: i32) -> &'static str {
    match code {
        -32700 => " (parse error)",
        -32600 => " (invalid request)",
        -32601 => " (method not found)",
        -32602 => " (invalid params)",
        -32603 => " (internal error)",
        -32002 => " (resource not found)",
        _ => "",
    }
}

/// `; its stderr ended with: ...` when there is a tail.
fn tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with:\n{}", stderr.trim_end())
    }
}
