//! Running command hooks: a command per event with the payload on stdin, in a process group of
//! its own (`process`), or one persistent process answering every event as JSON lines
//! (`persistent`); firing an event at every handler that matches it, webhooks included (`fire`,
//! `deliver`, `background`); reading what each answered as Claude Code reads a command's output
//! (`reply`, `accepts`) and merging the answers into one decision (`merged`).

mod accepts;
mod background;
mod deliver;
mod env;
mod fire;
mod hook;
mod merged;
mod persistent;
mod process;
mod reply;
mod spec;

pub use hook::CommandHook;
pub use persistent::PersistentSpec;
pub use spec::{CommandSpec, Shell};

pub(crate) use accepts::decides;
pub(crate) use background::LaterContext;
pub(crate) use merged::Merged;
pub(crate) use process::{Finished, OutputLimits};
pub(crate) use reply::Permission;

use persistent::Persistent;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the command handlers of registered hooks share: the plugin they belong to, the
/// persistent processes, and the context background commands left for the model.
#[derive(Default)]
pub(crate) struct Commands {
    /// `CLAUDE_PLUGIN_ROOT`, when the hooks are a plugin's.
    pub(crate) plugin_root: Option<PathBuf>,
    /// `CLAUDE_PLUGIN_DATA`, when the hooks are a plugin's and it keeps data.
    pub(crate) plugin_data: Option<PathBuf>,
    /// The persistent processes, one per spec, started on first use.
    processes: Mutex<HashMap<PersistentSpec, Arc<Persistent>>>,
    /// Context background commands gave, for each run's next model call.
    pub(crate) later: LaterContext,
}

impl Commands {
    /// The persistent process of `spec`.
    fn persistent(&self, spec: &PersistentSpec) -> Arc<Persistent> {
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(spec.clone())
            .or_insert_with(|| Arc::new(Persistent::new(spec.clone())))
            .clone()
    }
}
