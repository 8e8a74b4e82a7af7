//! Registering command hooks: the agentry events they need, the longest they may take, and the
//! hook (with its sessions handle) they become.

use super::CommandHooks;
use super::hook::EngineHook;
use crate::claude::{EventName, Sessions};
use crate::handler::HandlerSpec;
use agentry_core::hooks::{Events, HookExt, HookRegistration, IntoHook};
use std::sync::Arc;
use std::time::Duration;

impl CommandHooks {
    /// The agentry events these hooks need.
    fn wants(&self) -> Events {
        let mut events = Events::empty();
        for g in &self.engine.settings.groups {
            events |= g.event.wants();
        }
        if events.is_empty() {
            return events;
        }
        // The transcript follows every message; a run's end clears what was kept for it;
        // PreToolUse context waits for the call's result.
        events |= Events::MESSAGE_ADDED | Events::RUN_END | Events::RUN_FAILED;
        if self.engine.has(EventName::PreToolUse) {
            events |= Events::AFTER_TOOL | Events::TOOL_FAILED;
        }
        // Background commands' context reaches the model on its next call.
        let background = self.engine.settings.groups.iter().any(|g| {
            g.hooks
                .iter()
                .any(|h| matches!(h, HandlerSpec::Command(c) if c.background))
        });
        if background {
            events |= Events::BEFORE_MODEL;
        }
        events
    }

    /// The longest any of these handlers may take (every try of a webhook), plus the time to
    /// kill and reap a command.
    fn longest(&self) -> Duration {
        let longest = self
            .engine
            .settings
            .groups
            .iter()
            .flat_map(|g| {
                g.hooks
                    .iter()
                    .map(move |h| h.worst_case(g.event.default_timeout()))
            })
            .max()
            .unwrap_or(Duration::ZERO);
        longest + Duration::from_secs(5)
    }

    /// The hook to register, and a handle that ends sessions spanning several runs (a chat)
    /// with SessionEnd hooks ([`Sessions::end`]).
    ///
    /// Claude Code's configuration directory (`~/.claude`, or `CLAUDE_CONFIG_DIR`) is created
    /// when missing and a handler is a command, as Claude Code leaves it: scripts append their
    /// logs and state under it.
    pub fn into_hook_and_sessions(self) -> (HookRegistration, Sessions) {
        let commands = self.engine.settings.groups.iter().any(|g| {
            g.hooks
                .iter()
                .any(|h| matches!(h, HandlerSpec::Command(_) | HandlerSpec::Persistent(_)))
        });
        if commands {
            let dir = crate::claude::claude_config_dir();
            if let Err(e) = std::fs::create_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot create Claude Code's configuration directory");
            }
        }
        let wants = self.wants();
        let timeout = self.longest();
        let name = self.engine.name.clone();
        let engine = Arc::new(self.engine);
        let hook = EngineHook {
            engine: engine.clone(),
            wants,
        }
        .into_hook()
        .named(name)
        .timeout(timeout);
        (hook, Sessions { engine })
    }
}

impl IntoHook for CommandHooks {
    fn into_hook(self) -> HookRegistration {
        self.into_hook_and_sessions().0
    }
}
