//! `agentry serve`: the config's agents over HTTP.

use super::{Failure, failed, open};
use crate::cli::{Cli, ServeArgs};
use crate::exit::Exit;
use crate::signals::Signals;
use agentry_server::Server;

/// The address served without `--addr` or `server.addr`.
const DEFAULT_ADDR: &str = "127.0.0.1:7777";

/// The environment variable whose token wins over `server.token`.
const TOKEN_ENV: &str = "AGENTRY_SERVER_TOKEN";

/// Serves the project's agents until Ctrl-C (or SIGTERM, SIGHUP): runs under way are then left
/// at their last checkpoint, and the next `agentry serve` on the store resumes them.
pub(super) async fn serve(cli: &Cli, args: &ServeArgs) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let config = &project.file.config.server;
    let addr = args
        .addr
        .as_deref()
        .or(config.addr.as_deref())
        .unwrap_or(DEFAULT_ADDR);
    let addr = tokio::net::lookup_host(addr)
        .await
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| {
            (
                Exit::Usage,
                format!("cannot serve on `{addr}`: give an address such as 127.0.0.1:7777"),
            )
        })?;
    let token = match std::env::var(TOKEN_ENV) {
        Ok(token) if !token.is_empty() => Some(token),
        _ => config
            .token
            .as_deref()
            .map(crate::project::expand_env)
            .transpose()
            .map_err(|e| (Exit::Usage, format!("server.token: {e}")))?,
    };
    let mut server = Server::builder(project.runtime.clone())
        .run_options(project.run_options())
        .cors_origins(config.cors_origins.iter().cloned());
    for agent in project.agents.values() {
        server = server.agent(agent.clone());
    }
    server = server.default_agent(project.default_agent.clone());
    // What runs cost, from `[prices]` (a local model's cost nothing).
    for (agent, price) in &project.prices {
        server = server.price(agent.clone(), *price);
    }
    // A client ends a session (`POST /v1/sessions/{id}/end`): the command hooks' SessionEnd.
    let sessions = project.sessions.clone();
    server = server.on_session_end(move |session, reason| {
        let sessions = sessions.clone();
        async move {
            for s in &sessions {
                s.end(&session, &reason).await.map_err(|e| e.to_string())?;
            }
            Ok(())
        }
    });
    if let Some(token) = token {
        server = server.token(token);
    }
    if let Some(bytes) = config.max_body {
        server = server.max_body_bytes(bytes);
    }
    if let Some(bytes) = config.max_header_bytes {
        server = server.max_header_bytes(bytes);
    }
    let server = server.build().map_err(|e| (Exit::Usage, e.to_string()))?;
    server
        .check_bind(addr)
        .map_err(|e| (Exit::Usage, e.to_string()))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| failed(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| failed(format!("cannot listen on {addr}: {e}")))?;
    eprintln!(
        "agentry serve: {} agent(s) on http://{bound} (store {}); the inspector: http://{bound}/; the API: http://{bound}/openapi.json; Ctrl-C stops",
        project.agents.len(),
        project.store_label
    );
    let stopped = async {
        let why = Signals::new().next().await;
        eprintln!(
            "{}: stopping; runs under way are left at their last checkpoint for the next start",
            why.name()
        );
    };
    server
        .serve(listener, stopped)
        .await
        .map_err(|e| failed(e.to_string()))?;
    Ok(Exit::Ok)
}
