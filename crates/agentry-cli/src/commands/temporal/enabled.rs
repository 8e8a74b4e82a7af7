//! The commands on a Temporal server (the `temporal` feature).

use super::super::manage::rejection;
use super::super::run::prompt;
use super::super::{Failure, failed, open, renderer};
use crate::cli::{Cli, RunArgs};
use crate::config::PlacementConfig;
use crate::drive::{Prompter, finish_hint};
use crate::exit::Exit;
use crate::project::{Project, expand_env};
use crate::render::Render;
use agentry::{Decision, PendingApproval, RunEvent, RunOptions};
use agentry_temporal::{Client, Placement, RunHandle, Server, TemporalError, Worker, WorkerStop};
use futures::StreamExt;
use serde_json::Value;
use std::time::Instant;

/// The task queue when `[temporal]` names none.
const DEFAULT_QUEUE: &str = "agentry";

/// The server of the config's `[temporal]` table.
fn server(project: &Project) -> Result<Server, Failure> {
    let Some(config) = &project.file.config.temporal else {
        return Err((
            Exit::Usage,
            "runs on Temporal need a [temporal] table in the config file (address = \"http://127.0.0.1:7233\")".into(),
        ));
    };
    let address =
        expand_env(&config.address).map_err(|e| (Exit::Usage, format!("temporal.address: {e}")))?;
    let mut server = Server::new(address).task_queue(
        config
            .task_queue
            .clone()
            .unwrap_or_else(|| DEFAULT_QUEUE.into()),
    );
    if let Some(namespace) = &config.namespace {
        server = server.namespace(namespace.clone());
    }
    Ok(server)
}

/// A client of the config's server, starting runs with its placement.
async fn client(project: &Project) -> Result<Client, Failure> {
    let server = server(project)?;
    let placement = match project
        .file
        .config
        .temporal
        .as_ref()
        .and_then(|t| t.placement)
        .unwrap_or_default()
    {
        PlacementConfig::Scheduled => Placement::Scheduled,
        PlacementConfig::LocalHooks => Placement::LocalHooks,
        PlacementConfig::Local => Placement::Local,
    };
    Client::connect(server)
        .await
        .map(|c| c.placement(placement))
        .map_err(|e| failed(e.to_string()))
}

/// `agentry worker`: hosts every agent of the config until Ctrl-C or SIGTERM.
pub(crate) async fn worker(cli: &Cli) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let server = server(&project)?;
    let mut worker = Worker::new(server.clone(), project.runtime.clone());
    // The MCP servers' tools join every agent's own (runs on Temporal take no run-scope tool
    // sources), listed once, when the worker starts.
    let mcp_tools = match &project.mcp {
        Some(servers) => servers.tools().await.map_err(|e| failed(e.to_string()))?,
        None => Vec::new(),
    };
    for agent in project.agents.values() {
        let agent = match mcp_tools.is_empty() {
            true => agent.clone(),
            false => {
                let def = agent
                    .def()
                    .with_source_tools(&mcp_tools)
                    .map_err(|e| failed(e.to_string()))?;
                agent.modified(|d| *d = def)
            }
        };
        worker = worker.agent(&agent);
    }
    let stop = WorkerStop::new();
    let signalled = stop.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        signalled.stop();
    });
    let names: Vec<&str> = project.agents.keys().map(String::as_str).collect();
    eprintln!(
        "hosting {} on {} (task queue {}); Ctrl-C stops",
        names.join(", "),
        server.target,
        server.task_queue
    );
    worker.run(stop).await.map_err(|e| failed(e.to_string()))?;
    Ok(Exit::Ok)
}

/// Ctrl-C, SIGTERM (how a service manager stops a worker) or SIGHUP.
async fn shutdown_signal() {
    crate::signals::Signals::new().next().await;
}

/// `agentry run --temporal PROMPT`: starts the run on the server and follows it here.
pub(crate) async fn run(cli: &Cli, args: &RunArgs, color: bool) -> Result<Exit, Failure> {
    let prompt = prompt(args)?;
    let project = open(cli, false).await?;
    let agent = project
        .agent(args.agent.as_deref())
        .map_err(|e| (Exit::Usage, e))?;
    let client = client(&project).await?;
    let mut options = RunOptions::new();
    if let Some(session) = &args.session {
        options = options.session(session.clone());
    }
    let handle = client
        .run(agent.name(), prompt)
        .with(options)
        .start()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut render = renderer(cli, color, &project);
    let prompter = Prompter::new(&project, args.no_prompt || cli.json);
    Ok(follow(
        &project,
        agent.name(),
        &handle,
        0,
        render.as_mut(),
        &prompter,
    )
    .await)
}

/// `agentry approve RUN [CALL] --temporal`.
pub(crate) async fn approve(
    cli: &Cli,
    run: &str,
    call: Option<&str>,
    color: bool,
) -> Result<Exit, Failure> {
    decide(cli, run, call, color, |id| Decision::approve(id)).await
}

/// `agentry reject RUN [CALL] --temporal --reason R [--stop]`.
pub(crate) async fn reject(
    cli: &Cli,
    run: &str,
    call: Option<&str>,
    reason: &str,
    stop: bool,
    color: bool,
) -> Result<Exit, Failure> {
    decide(cli, run, call, color, rejection(reason, stop)).await
}

/// Decides run `run`'s waiting calls (`call` only, when named) and follows the run on.
async fn decide(
    cli: &Cli,
    run: &str,
    call: Option<&str>,
    color: bool,
    decision: impl Fn(&str) -> Decision,
) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let client = client(&project).await?;
    let handle = client.handle(run);
    let pending = handle.pending().await.map_err(|e| failed(e.to_string()))?;
    if pending.is_empty() {
        return Err(failed(format!(
            "run {run} on Temporal waits for no decision"
        )));
    }
    let chosen: Vec<&PendingApproval> = match call {
        Some(id) => pending.iter().filter(|p| p.call_id == id).collect(),
        None => pending.iter().collect(),
    };
    if chosen.is_empty() {
        let ids: Vec<&str> = pending.iter().map(|p| p.call_id.as_str()).collect();
        return Err(failed(format!(
            "run {run} has no waiting call {}; it waits for: {}",
            call.unwrap_or_default(),
            ids.join(", ")
        )));
    }
    // The run's agent, for the summary: its first event names it.
    let agent = match std::pin::pin!(handle.events()).next().await {
        Some(Ok(RunEvent::RunStarted { agent_path, .. })) => agent_path.to_string(),
        _ => String::new(),
    };
    let from = handle
        .event_count()
        .await
        .map_err(|e| failed(e.to_string()))?;
    handle
        .decide(chosen.iter().map(|p| decision(&p.call_id)))
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut render = renderer(cli, color, &project);
    let prompter = Prompter::new(&project, cli.json);
    Ok(follow(&project, &agent, &handle, from, render.as_mut(), &prompter).await)
}

/// Renders the run's events from position `from` to its end, asking the person at the
/// terminal for the decisions it waits for (or saying how to give them later); Ctrl-C cancels
/// the run. Returns the exit code.
async fn follow(
    project: &Project,
    agent: &str,
    handle: &RunHandle,
    from: usize,
    render: &mut dyn Render,
    prompter: &Prompter,
) -> Exit {
    let started = Instant::now();
    let run_id = handle.run_id().to_owned();
    let mut cancelled = false;
    let mut signals = crate::signals::Signals::new();
    // One stream for the whole run: it goes on past a decision where it stopped.
    let mut events = std::pin::pin!(handle.events_from(from));
    loop {
        let mut waiting: Option<Vec<PendingApproval>> = None;
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        render.event(&event);
                        if let RunEvent::AwaitingApproval { pending, agent_path, .. } = &event
                            && &**agent_path == agent
                        {
                            waiting = Some(pending.clone());
                            break;
                        }
                    }
                    Some(Err(e)) => {
                        render.failed(&run_id, &e.to_string());
                        return Exit::Failed;
                    }
                    None => break,
                },
                stop = signals.next(), if !cancelled => {
                    cancelled = true;
                    eprintln!("\n{}: cancelling the run on Temporal …", stop.name());
                    if let Err(e) = handle.cancel().await {
                        eprintln!("warning: {e}");
                    }
                }
            }
        }
        if let Some(pending) = waiting {
            let decisions = match prompter.interactive {
                true => prompter.decide(&pending, &mut signals).await,
                false => None,
            };
            let Some(decisions) = decisions else {
                eprintln!(
                    "run {run_id} waits for approval on Temporal: `agentry approve {run_id} --temporal` or `agentry reject {run_id} --temporal --reason ...`"
                );
                return Exit::AwaitingApproval;
            };
            if let Err(e) = handle.decide(decisions).await {
                render.failed(&run_id, &e.to_string());
                return Exit::Failed;
            }
            continue;
        }
        return match handle.result::<(), Value>().await {
            Ok(out) => {
                render.finished(&out, started.elapsed(), project.cost(agent, &out.usage));
                finish_hint(&out)
            }
            Err(TemporalError::RunFailed { error, .. }) => {
                render.failed(&run_id, &error);
                Exit::Failed
            }
            Err(e) => {
                render.failed(&run_id, &e.to_string());
                Exit::Failed
            }
        };
    }
}
