//! The environment commands run with: Claude Code's variables, and agentry's.

use crate::claude::{EventName, Site};
use crate::hooks::Engine;

impl Engine {
    /// The variables a persistent process starts with: those that hold for every run.
    pub(super) fn lasting_env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "CLAUDE_PROJECT_DIR".to_string(),
                self.project_dir.display().to_string(),
            ),
            ("CLAUDECODE".into(), "1".into()),
            ("CLAUDE_PID".into(), std::process::id().to_string()),
        ];
        if let Some(root) = &self.commands.plugin_root {
            env.push(("CLAUDE_PLUGIN_ROOT".into(), root.display().to_string()));
        }
        if let Some(data) = &self.commands.plugin_data {
            env.push(("CLAUDE_PLUGIN_DATA".into(), data.display().to_string()));
        }
        env
    }

    /// The environment commands run with.
    pub(super) fn env(&self, event: EventName, site: &Site<'_>) -> Vec<(String, String)> {
        let mut env = self.lasting_env();
        env.push(("CLAUDE_CODE_SESSION_ID".into(), site.session_id.clone()));
        env.push(("AGENTRY_HOOK_EVENT".into(), event.name().to_string()));
        if event == EventName::SessionStart {
            let file = self.claude.env_file(&site.session_id);
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file);
            env.push(("CLAUDE_ENV_FILE".into(), file.display().to_string()));
        }
        if let Some(ctx) = site.ctx {
            env.push(("AGENTRY_RUN_ID".into(), ctx.run_id().to_string()));
            env.push(("AGENTRY_AGENT_PATH".into(), ctx.agent_path().to_string()));
        }
        env
    }
}
