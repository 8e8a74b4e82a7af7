//! The request bodies of `agentry serve`, posted to its router as a client would: the run API
//! (start a run, decide approvals, continue or end a session) and the doors (OpenAI chat
//! completions and responses, the Vercel AI SDK chat, AG-UI's `RunAgentInput`, A2A JSON-RPC).
//!
//! Input: a byte that picks the endpoint, then the body.

use crate::support::PATIENCE;
use agentry::{Agent, MemoryStore, Runtime, ScriptedModel, ScriptedTurn};
use agentry_server::Server;
use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;

/// The endpoints the first byte picks from.
const ENDPOINTS: &[&str] = &[
    "/v1/runs",
    "/v1/runs/run-1/approvals",
    "/v1/sessions/session-1/runs",
    "/v1/sessions/session-1/end",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/ui/helper",
    "/v1/ag-ui/helper",
    "/a2a/helper",
];

/// Posts the body `data` describes to a fresh server; panics if the answer does not come in
/// time.
pub fn run(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let path = ENDPOINTS[usize::from(pick) % ENDPOINTS.len()];
    // A runtime of its own, dropped with whatever the request left running.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let agent = Agent::builder("helper")
            .model(ScriptedModel::from_fn(|_, _| ScriptedTurn::text("Hello!")))
            .build()
            .expect("the agent");
        let server = Server::builder(Runtime::new().store(MemoryStore::new()))
            .agent(agent)
            .build()
            .expect("the server");
        let request = Request::post(path)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(body.to_vec()))
            .expect("a request");
        let answer = async {
            let response = server
                .router(true)
                .oneshot(request)
                .await
                .expect("a response");
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), 1 << 20).await;
            crate::support::debug(
                path,
                &(
                    status,
                    body.map(|b| String::from_utf8_lossy(&b).into_owned()),
                ),
            );
        };
        tokio::time::timeout(PATIENCE, answer)
            .await
            .expect("the server answers in time");
    });
}
