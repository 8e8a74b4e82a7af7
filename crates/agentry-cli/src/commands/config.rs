//! `init`, `config check`, `config schema` and `hooks list`.

use super::{Failure, failed, open};
use crate::cli::Cli;
use crate::config::schema as config_schema;
use crate::exit::Exit;
use serde_json::json;

/// The starter file `agentry init` writes.
pub(super) const STARTER: &str = include_str!("../../starter.toml");

/// `agentry init`.
pub(super) fn init(force: bool) -> Result<Exit, Failure> {
    let path = std::path::Path::new(crate::config::FILE_NAME);
    if path.exists() && !force {
        return Err(failed(format!(
            "{} exists; `agentry init --force` overwrites it",
            path.display()
        )));
    }
    std::fs::write(path, STARTER)
        .map_err(|e| failed(format!("cannot write {}: {e}", path.display())))?;
    outln!(
        "wrote {}: edit it, then `agentry config check` and `agentry run \"...\"`",
        path.display()
    );
    Ok(Exit::Ok)
}

/// `agentry config schema`.
pub(super) fn schema() -> Result<Exit, Failure> {
    let text = serde_json::to_string_pretty(&config_schema()).map_err(|e| failed(e.to_string()))?;
    outln!("{text}");
    Ok(Exit::Ok)
}

/// `agentry config check`: parses the file, builds every agent, tool and hook (without
/// loading models) and opens the store.
pub(super) async fn check(cli: &Cli) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    if cli.json {
        outln!(
            "{}",
            json!({
                "ok": true,
                "file": project.file.shown(),
                "layers": project.file.layers,
                "agents": project.agents.keys().collect::<Vec<_>>(),
                "default_agent": project.default_agent,
                "store": project.store_label,
            })
        );
    } else {
        outln!("{}: ok", project.file.shown());
        for layer in &project.file.layers {
            outln!("  with {layer}");
        }
        for (name, agent) in &project.agents {
            let tools: Vec<String> = agent.def().specs.iter().map(|s| s.name.clone()).collect();
            let mark = if *name == project.default_agent {
                " (default)"
            } else {
                ""
            };
            outln!("  agent {name}{mark}: tools {}", tools.join(", "));
        }
        outln!("  store {}", project.store_label);
    }
    Ok(Exit::Ok)
}

/// `agentry hooks list`.
pub(super) async fn hooks_list(cli: &Cli) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    if cli.json {
        let runtime: Vec<_> = project
            .runtime_hooks
            .iter()
            .map(|(n, s)| json!({"name": n, "summary": s}))
            .collect();
        let agents: serde_json::Map<String, serde_json::Value> = project
            .agent_hooks
            .iter()
            .map(|(a, hooks)| {
                (
                    a.clone(),
                    hooks
                        .iter()
                        .map(|(n, s)| json!({"name": n, "summary": s}))
                        .collect(),
                )
            })
            .collect();
        outln!("{}", json!({"every_run": runtime, "agents": agents}));
        return Ok(Exit::Ok);
    }
    outln!("every run:");
    if project.runtime_hooks.is_empty() {
        outln!("  (none)");
    }
    for (name, summary) in &project.runtime_hooks {
        outln!("  {name}: {summary}");
    }
    for (agent, hooks) in &project.agent_hooks {
        if hooks.is_empty() {
            continue;
        }
        outln!("agent {agent}:");
        for (name, summary) in hooks {
            outln!("  {name}: {summary}");
        }
    }
    Ok(Exit::Ok)
}
