//! Claude Code's hook protocol on agentry's lifecycle: its event names and what they map to, its
//! settings files, tools under its names, its transcript, its sessions, the fields every payload
//! carries, and what each of its events sees and does (one file per event family).

mod approval;
mod compact;
mod event_name;
mod fields;
mod installed;
mod memo;
mod payload;
mod prompt;
mod sessions;
mod settings;
mod site;
mod stop;
mod sub_agent;
mod tool_names;
mod tools;
mod transcript;

pub use event_name::EventName;
pub use installed::{EnabledPlugin, claude_config_dir, enabled_plugins, installed_plugin};
pub use sessions::Sessions;
pub use settings::HookSettings;
pub use tool_names::{ToolAlias, ToolNames};

pub(crate) use payload::common_fields;
pub(crate) use settings::Plugin;
pub use site::{SAMPLE_FIELDS, agentry_home};
pub(crate) use site::{Site, default_state_dir};

use memo::RunMemo;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use transcript::Transcripts;

/// What presenting agentry's events as Claude Code's keeps: where its files go, the names tools
/// are shown under, the transcripts being written, what each run under way remembers, and the
/// sessions that started.
pub(crate) struct ClaudeState {
    /// Where transcripts (`<session>.jsonl`) and session environment files go.
    pub(crate) state_dir: PathBuf,
    /// The names tools are presented under.
    pub(crate) tool_names: ToolNames,
    /// The transcripts of the sessions and sub-agent runs under way.
    transcripts: Transcripts,
    /// What is remembered of each run under way, by run id.
    runs: Mutex<HashMap<String, RunMemo>>,
    /// The sessions whose SessionStart fired in this process.
    sessions: Mutex<HashSet<String>>,
    /// Sessions that replace a cleared one (`Sessions::clear`): their SessionStart's source is
    /// `clear`.
    cleared: Mutex<HashSet<String>>,
}

impl ClaudeState {
    /// Nothing remembered yet; files go to `state_dir`; tools under Claude Code's names.
    pub(crate) fn new(state_dir: PathBuf) -> Self {
        ClaudeState {
            state_dir,
            tool_names: ToolNames::claude_code(),
            transcripts: Transcripts::default(),
            runs: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashSet::new()),
            cleared: Mutex::new(HashSet::new()),
        }
    }
}

/// `text` with `addition` after it, on its own paragraph.
fn with(text: &str, addition: &str) -> String {
    if text.is_empty() {
        addition.to_string()
    } else {
        format!("{text}\n\n{addition}")
    }
}
