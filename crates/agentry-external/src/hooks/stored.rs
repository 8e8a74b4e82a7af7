//! Command hooks as data: what they store with a run's checkpoint, and how they are built again
//! from it.

use super::CommandHooks;
use crate::claude::{HookSettings, ToolNames};
use agentry_core::hooks::{BoxError, StoredHook};
use std::path::PathBuf;

/// What [`CommandHooks`] stores with a run's checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSpec {
    name: String,
    settings: serde_json::Value,
    project_dir: PathBuf,
    state_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin_root: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugin_data: Option<PathBuf>,
    tool_names: ToolNames,
    fail_closed: bool,
    strict: bool,
    stdout_limit: usize,
    stderr_limit: usize,
}

/// Command hooks are data: attached to a run with
/// [`RunOptions::with_stored`](agentry_core::RunOptions::with_stored), their settings and options
/// are stored with its checkpoints (secrets stay `${VAR}` templates), and a runtime told
/// `restores::<CommandHooks>()` builds them again when it resumes the run, in any process.
impl StoredHook for CommandHooks {
    const KIND: &'static str = "agentry-external/command-hooks";

    fn spec(&self) -> serde_json::Value {
        let e = &self.engine;
        serde_json::to_value(StoredSpec {
            name: e.name.clone(),
            settings: e.settings.to_value(),
            project_dir: e.project_dir.clone(),
            state_dir: e.claude.state_dir.clone(),
            plugin_root: e.commands.plugin_root.clone(),
            plugin_data: e.commands.plugin_data.clone(),
            tool_names: e.claude.tool_names.clone(),
            fail_closed: e.fail_closed,
            strict: e.strict,
            stdout_limit: e.limits.stdout,
            stderr_limit: e.limits.stderr,
        })
        .expect("command hook specs serialize")
    }

    fn from_spec(spec: &serde_json::Value) -> Result<Self, BoxError> {
        let s: StoredSpec = serde_json::from_value(spec.clone())?;
        let settings = HookSettings::from_value(&s.settings)?;
        let mut hooks = CommandHooks::new(settings)
            .project_dir(s.project_dir)
            .state_dir(s.state_dir)
            .tool_names(s.tool_names)
            .output_limits(s.stdout_limit, s.stderr_limit)
            .named(s.name);
        hooks.engine.commands.plugin_root = s.plugin_root;
        hooks.engine.commands.plugin_data = s.plugin_data;
        hooks.engine.fail_closed = s.fail_closed;
        hooks.engine.strict = s.strict;
        Ok(hooks)
    }
}
