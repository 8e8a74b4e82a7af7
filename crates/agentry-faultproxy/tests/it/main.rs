//! The fault proxy's tests, in one test binary: the proxy itself over plain TCP, then full
//! agent runs through it against a model provider (aimock), an MCP server over Streamable HTTP
//! (the official "everything" server) and a webhook receiver (Python, verifying signatures),
//! each through the fault matrix, checking that every run ends as the fault table says.

mod support;

mod mcp;
mod provider;
mod proxy;
mod webhook;
