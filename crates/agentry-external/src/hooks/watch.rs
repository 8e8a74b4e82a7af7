//! Settings files that change on disk: reloaded between runs, never mid-event.

use super::CommandHooks;
use crate::error::SettingsError;
use agentry_core::hooks::{HookHandle, LiveHooks};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What the watcher compares to see a change: the file's modification time and length.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// A settings file's command hooks registered on a running runtime, reloaded when the file
/// changes. Made by [`CommandHooks::watch`]; [`stop`](Self::stop) unregisters them.
#[derive(Debug)]
pub struct SettingsWatch {
    handle: Arc<Mutex<Option<HookHandle>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SettingsWatch {
    /// Stops watching and unregisters the hooks.
    pub fn stop(self) {
        self.task.abort();
        if let Some(handle) = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take() {
            handle.unregister();
        }
    }
}

impl CommandHooks {
    /// Registers the command hooks of the settings file at `path` on a running runtime's
    /// registry (`Runtime::live_hooks()`), and looks at the file every `every`: when it changed,
    /// its hooks are read again and put in place of the old ones in one step, so runs that start
    /// afterwards get the new hooks and runs under way keep the ones they started with. A file
    /// that no longer reads (bad JSON, a bad matcher) leaves the old hooks in place, with a
    /// warning naming the problem. `configure` is applied to the hooks of every load (a state
    /// directory, tool names, fail-closed, ...).
    ///
    /// The first load must succeed: its error is returned and nothing is registered.
    pub fn watch(
        path: impl Into<PathBuf>,
        live: &Arc<LiveHooks>,
        every: Duration,
        configure: impl Fn(CommandHooks) -> CommandHooks + Send + Sync + 'static,
    ) -> Result<SettingsWatch, SettingsError> {
        let path = path.into();
        let mut seen = stamp(&path);
        let first = configure(CommandHooks::load(&path)?);
        let handle = Arc::new(Mutex::new(Some(live.register(first))));
        let held = handle.clone();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let now = stamp(&path);
                if now == seen {
                    continue;
                }
                seen = now;
                match CommandHooks::load(&path) {
                    Ok(hooks) => {
                        let hooks = configure(hooks);
                        let mut slot = held.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(old) = slot.take() {
                            *slot = Some(old.replace(hooks));
                        }
                    }
                    Err(e) => tracing::warn!(
                        error = %e,
                        "the hook settings changed and no longer read; the hooks loaded before stay"
                    ),
                }
            }
        });
        Ok(SettingsWatch { handle, task })
    }
}
