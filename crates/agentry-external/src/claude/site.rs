//! Where an event happens, as Claude Code names it: its session, and the files the session keeps
//! (its transcript, a sub-agent's transcript, its environment file).

use super::ClaudeState;
use agentry_core::hooks::HookCtx;
use std::path::{Path, PathBuf};

/// Where an event happens: the run (when there is one), its session and its transcript.
pub(crate) struct Site<'a> {
    /// The run, when the event is one's (a session ended by its owner has none).
    pub(crate) ctx: Option<&'a HookCtx>,
    /// The session, as a filename-safe id.
    pub(crate) session_id: String,
    /// The session's transcript.
    pub(crate) transcript: PathBuf,
    /// Fields set over every payload of the event (a sample's, see [`SAMPLE_FIELDS`]).
    pub(crate) sample: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// The run metadata key whose object's fields are set over every payload a run's command hooks
/// send (`{"transcript_path": "...", "stop_hook_active": true, "source": "compact"}`), a
/// matcher's field (`source`, `reason`, `trigger`) included: how `agentry hooks test` tries
/// hooks on a sample event as a script would receive it.
pub const SAMPLE_FIELDS: &str = "claude_code_sample_fields";

impl ClaudeState {
    /// Where an event of the run `ctx` happens; its transcript exists from then on (scripts
    /// open it even before the first message).
    pub(crate) fn site<'a>(&self, ctx: &'a HookCtx) -> Site<'a> {
        let session_id = session_id(ctx);
        let transcript = self.transcript_path(&session_id);
        self.transcripts.touch(&transcript);
        Site {
            ctx: Some(ctx),
            session_id,
            transcript,
            sample: ctx
                .metadata()
                .get(SAMPLE_FIELDS)
                .and_then(serde_json::Value::as_object),
        }
    }

    /// The transcript of session `session`.
    pub(crate) fn transcript_path(&self, session: &str) -> PathBuf {
        self.state_dir.join(format!("{session}.jsonl"))
    }

    /// The transcript of the sub-agent run `run_id` of session `session`.
    pub(super) fn agent_transcript_path(&self, session: &str, run_id: &str) -> PathBuf {
        self.state_dir
            .join(session)
            .join("subagents")
            .join(format!("agent-{run_id}.jsonl"))
    }

    /// The file SessionStart hooks write variables to (`CLAUDE_ENV_FILE`).
    pub(crate) fn env_file(&self, session: &str) -> PathBuf {
        self.state_dir.join(session).join("env.sh")
    }
}

/// The session a run belongs to, as a filename-safe id: its session id, else its tree's root run
/// id.
pub(super) fn session_id(ctx: &HookCtx) -> String {
    safe_session_id(ctx.session_id().unwrap_or_else(|| ctx.root_run_id()))
}

/// A session id as a file name may hold it: characters other than ASCII letters, digits, `-`,
/// `_` and `.` become `_`.
pub(super) fn safe_session_id(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `$AGENTRY_HOME/projects/<project path with separators as dashes>`.
pub(crate) fn default_state_dir(project: &Path) -> PathBuf {
    let home = agentry_home();
    let slug: String = project
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join("projects").join(slug)
}

/// agentry's per-user directory: `$AGENTRY_HOME` (when set and not empty), else `~/.agentry`
/// (transcripts, plugin data; the `agentry` command's user config, store and chat history).
pub fn agentry_home() -> PathBuf {
    std::env::var_os("AGENTRY_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".agentry")))
        .unwrap_or_else(|| std::env::temp_dir().join("agentry"))
}
