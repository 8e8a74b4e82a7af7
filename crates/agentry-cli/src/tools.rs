//! The built-in tools an agent lists by name, built with their `[tools.NAME]` options.

use crate::config::{AgentConfig, ConfigError, LoadedConfig};
use agentry::Tool;
pub(crate) use agentry_tools::Workspace;
use std::sync::Arc;

/// The workspace `[workspace] root` names (default: the config file's directory).
pub(crate) fn workspace(file: &LoadedConfig) -> Result<Workspace, ConfigError> {
    let root = match &file.config.workspace.root {
        Some(root) => file.resolve(root),
        None => file.base_dir.clone(),
    };
    Workspace::new(&root).map_err(|e| file.error(format!("workspace.root: {e}")))
}

/// The tools agent `name` lists (the read-only ones when it lists none).
pub(crate) fn for_agent(
    name: &str,
    agent: &AgentConfig,
    file: &LoadedConfig,
    workspace: &Workspace,
) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
    let mut out = Vec::new();
    match &agent.tools {
        None => {
            for tool in agentry_tools::read_only() {
                out.push(build(tool, file, workspace)?);
            }
        }
        Some(listed) => {
            for tool in listed {
                if !agentry_tools::NAMES.contains(&tool.get_ref().as_str()) {
                    return Err(file.error_at(
                        tool.span(),
                        format!(
                            "agent `{name}` lists tool `{}`, which is not a built-in tool; the built-in tools are: {}",
                            tool.get_ref(),
                            agentry_tools::NAMES.join(", ")
                        ),
                    ));
                }
                out.push(build(tool.get_ref(), file, workspace)?);
            }
        }
    }
    Ok(out)
}

/// One tool with its options from `[tools.NAME]`.
fn build(
    tool: &str,
    file: &LoadedConfig,
    workspace: &Workspace,
) -> Result<Arc<dyn Tool>, ConfigError> {
    let options = file.config.tools.options(tool);
    agentry_tools::builtin(tool, &options, workspace)
        .map_err(|e| file.error(format!("tools.{tool}: {e}")))
}
