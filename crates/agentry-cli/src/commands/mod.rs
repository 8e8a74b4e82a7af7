//! What each command does.

mod chat_input;
mod config;
mod hooks_test;
mod manage;
mod mcp;
mod models;
mod replay;
mod run;
mod serve;
mod sessions;
mod slash;
mod temporal;

use crate::cli::{AgentOverrides, Cli, Command, ConfigCommand, HooksCommand, McpCommand};
use crate::config::LoadedConfig;
use crate::exit::Exit;
use crate::model::Models;
use crate::project::Project;
use crate::render::{Live, Masked, Ndjson, Render};

/// Runs the command `cli` names.
pub(crate) async fn run(mut cli: Cli, color: bool) -> Exit {
    let result = match resolve_run_id(&mut cli).await {
        Ok(()) => dispatch(&cli, color).await,
        Err(failure) => Err(failure),
    };
    match result {
        Ok(exit) => exit,
        Err((exit, message)) => {
            if !message.is_empty() {
                if cli.json {
                    outln!("{}", serde_json::json!({"type": "error", "error": message}));
                } else {
                    eprintln!("error: {message}");
                }
            }
            exit
        }
    }
}

/// The run id a command names, in the store of the config: its whole id, or the start of one
/// (`agentry resume 3f2a`) that no other run's id shares. Runs on Temporal are named whole.
async fn resolve_run_id(cli: &mut Cli) -> Result<(), Failure> {
    let run = match &mut cli.command {
        Command::Show { run, .. }
        | Command::Resume { run }
        | Command::Cancel { run }
        | Command::Replay { run, .. }
        | Command::Approve {
            run,
            temporal: false,
            ..
        }
        | Command::Reject {
            run,
            temporal: false,
            ..
        } => run,
        _ => return Ok(()),
    };
    let given = std::mem::take(run);
    let project = open(cli, true).await?;
    let runs = project
        .store
        .list(&agentry::RunQuery::all())
        .await
        .map_err(|e| failed(e.to_string()))?;
    let found = match runs.iter().find(|r| r.run_id == given) {
        Some(exact) => exact.run_id.clone(),
        None => {
            let matching: Vec<&str> = runs
                .iter()
                .map(|r| r.run_id.as_str())
                .filter(|id| !given.is_empty() && id.starts_with(given.as_str()))
                .collect();
            match matching.as_slice() {
                [one] => (*one).to_owned(),
                [] => {
                    return Err(failed(format!(
                        "{} has no run `{given}`; `agentry runs` lists them",
                        project.store_label
                    )));
                }
                several => {
                    return Err((
                        Exit::Usage,
                        format!(
                            "`{given}` starts {} run ids ({}{}): give more of it",
                            several.len(),
                            several
                                .iter()
                                .take(4)
                                .copied()
                                .collect::<Vec<_>>()
                                .join(", "),
                            if several.len() > 4 { ", ..." } else { "" }
                        ),
                    ));
                }
            }
        }
    };
    if let Command::Show { run, .. }
    | Command::Resume { run }
    | Command::Cancel { run }
    | Command::Replay { run, .. }
    | Command::Approve { run, .. }
    | Command::Reject { run, .. } = &mut cli.command
    {
        *run = found;
    }
    Ok(())
}

/// Runs the command `cli` names, its run id resolved.
async fn dispatch(cli: &Cli, color: bool) -> Result<Exit, Failure> {
    match &cli.command {
        Command::Run(args) if args.temporal => temporal::run(cli, args, color).await,
        Command::Run(args) => run::run(cli, args, color).await,
        Command::Chat(args) => run::chat(cli, args, color).await,
        Command::Runs(args) => manage::runs(cli, args).await,
        Command::Show { run, events } => manage::show(cli, run, *events).await,
        Command::Approve {
            run,
            call,
            temporal: true,
        } => temporal::approve(cli, run, call.as_deref(), color).await,
        Command::Approve { run, call, .. } => {
            manage::approve(cli, run, call.as_deref(), color).await
        }
        Command::Reject {
            run,
            call,
            reason,
            stop,
            temporal: true,
        } => temporal::reject(cli, run, call.as_deref(), reason, *stop, color).await,
        Command::Reject {
            run,
            call,
            reason,
            stop,
            ..
        } => manage::reject(cli, run, call.as_deref(), reason, *stop, color).await,
        Command::Worker => temporal::worker(cli).await,
        Command::Serve(args) => serve::serve(cli, args).await,
        Command::Resume { run } => manage::resume(cli, run, color).await,
        Command::Cancel { run } => manage::cancel(cli, run).await,
        Command::Replay { run, agent } => replay::replay(cli, run, agent.as_deref()).await,
        Command::Hooks {
            command: HooksCommand::List,
        } => config::hooks_list(cli).await,
        Command::Hooks {
            command:
                HooksCommand::Test {
                    event,
                    input,
                    agent,
                },
        } => hooks_test::test(cli, event, input.as_deref(), agent.as_deref()).await,
        Command::Mcp {
            command: McpCommand::Serve { agents },
        } => mcp::serve(cli, agents).await,
        Command::Models { command } => models::models(cli, command).await,
        Command::Config {
            command: ConfigCommand::Check,
        } => config::check(cli).await,
        Command::Config {
            command: ConfigCommand::Schema,
        } => config::schema(),
        Command::Init { force } => config::init(*force),
    }
}

/// A command's failure: how to exit and what to say.
pub(crate) type Failure = (Exit, String);

/// A failure with exit code 1.
pub(crate) fn failed(message: impl Into<String>) -> Failure {
    (Exit::Failed, message.into())
}

/// Reads the config: the user's, the project's file, and `-c` overrides.
pub(crate) fn load(cli: &Cli) -> Result<LoadedConfig, Failure> {
    let (file, overrides) =
        crate::config::sources(cli.config.as_deref(), &cli.set).map_err(|e| (Exit::Usage, e))?;
    LoadedConfig::layered(file.as_deref(), &overrides).map_err(|e| (Exit::Usage, e.to_string()))
}

/// Reads the config file and builds what it declares; `check_only` loads no model.
async fn open(cli: &Cli, check_only: bool) -> Result<Project, Failure> {
    open_agent(cli, check_only, None, &AgentOverrides::default()).await
}

/// [`open`], with `overrides` applied to `agent` (the default agent when `None`).
async fn open_agent(
    cli: &Cli,
    check_only: bool,
    agent: Option<&str>,
    overrides: &AgentOverrides,
) -> Result<Project, Failure> {
    let mut file = load(cli)?;
    if overrides.model.is_some() || overrides.max_steps.is_some() {
        let target = file.agent_mut(agent).map_err(|e| (Exit::Usage, e))?;
        if let Some(model) = &overrides.model {
            target.model = Some(toml::Spanned::new(0..0, model.clone()));
        }
        if let Some(n) = overrides.max_steps {
            target.max_steps = Some(n);
        }
    }
    for dir in &cli.plugin_dir {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        file.config.hooks.plugins.push(dir.display().to_string());
    }
    let models = Models::new(cli.json, check_only);
    Project::open(file, &models).await.map_err(|e| match e {
        crate::config::ConfigError::Unavailable(_) => (Exit::Failed, e.to_string()),
        _ => (Exit::Usage, e.to_string()),
    })
}

/// The renderer `--json` and the terminal call for; with the project's redactor, what it shows
/// of a run's end (its output, its error) is masked as its events are.
fn renderer(cli: &Cli, color: bool, project: &Project) -> Box<dyn Render> {
    let render: Box<dyn Render> = if cli.json {
        Box::new(Ndjson::new(Box::new(std::io::stdout())))
    } else {
        Box::new(Live::new(Box::new(std::io::stdout()), color, true))
    };
    match project.runtime.redactor() {
        Some(redactor) => Box::new(Masked::new(render, redactor.clone())),
        None => render,
    }
}
