//! The transcript scripts read at `transcript_path`: one JSON object per line, in Claude Code's
//! line format, written compactly (`"role":"assistant"`, no spaces) as messages are added, so it
//! is complete before any hook of a later event runs.

use super::ToolNames;
use super::site::session_id;
use crate::hooks::Engine;
use agentry_core::content::{Media, MediaSource, Part};
use agentry_core::hooks::{HookCtx, MessageAdded};
use agentry_core::{Content, Message};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// One open transcript file and the id of its last line (each line names its parent).
struct Open {
    file: File,
    last: Option<String>,
}

/// The transcript files of the runs under way, keyed by path.
#[derive(Default)]
pub(super) struct Transcripts {
    open: Mutex<HashMap<PathBuf, Open>>,
}

/// Where one line goes, and what it says of where it came from.
struct Line<'a> {
    path: &'a Path,
    session_id: &'a str,
    cwd: &'a Path,
    agent_id: Option<&'a str>,
}

impl Transcripts {
    /// Makes sure the file exists (scripts open it even before the first message).
    pub(super) fn touch(&self, path: &Path) {
        let mut open = lock(&self.open);
        if !open.contains_key(path)
            && let Some(file) = open_append(path)
        {
            open.insert(path.to_path_buf(), Open { file, last: None });
        }
    }

    /// Appends `message` as one line, passed through `redact` (the run's redactor: the file is
    /// an artefact that outlives the run and that scripts may copy anywhere).
    fn append(
        &self,
        at: Line<'_>,
        message: &Message,
        names: &ToolNames,
        redact: impl FnOnce(Value) -> Value,
    ) {
        let mut open = lock(&self.open);
        if !open.contains_key(at.path) {
            let Some(file) = open_append(at.path) else {
                return;
            };
            open.insert(at.path.to_path_buf(), Open { file, last: None });
        }
        let entry = open.get_mut(at.path).expect("inserted above");
        let uuid = uuid::Uuid::new_v4().to_string();
        let (kind, body) = line_body(message, names);
        let mut line = json!({
            "type": kind,
            "uuid": uuid,
            "parentUuid": entry.last,
            "sessionId": at.session_id,
            "timestamp": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "cwd": at.cwd.display().to_string(),
            "version": env!("CARGO_PKG_VERSION"),
            "isSidechain": at.agent_id.is_some(),
            "message": body,
        });
        if let Some(agent) = at.agent_id {
            line["agentId"] = json!(agent);
        }
        let mut text = serde_json::to_string(&redact(line)).expect("a transcript line serializes");
        text.push('\n');
        match entry.file.write_all(text.as_bytes()) {
            Ok(()) => entry.last = Some(uuid),
            Err(e) => {
                tracing::warn!(path = %at.path.display(), error = %e, "could not write the hook transcript")
            }
        }
    }

    /// Closes the files of a finished run.
    pub(super) fn close(&self, paths: &[&Path]) {
        let mut open = lock(&self.open);
        for p in paths {
            open.remove(*p);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn open_append(path: &Path) -> Option<File> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match OpenOptions::new().create(true).append(true).open(path) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not open the hook transcript");
            None
        }
    }
}

/// A message as a transcript line's `type` and `message`.
fn line_body(message: &Message, names: &ToolNames) -> (&'static str, Value) {
    match message {
        Message::System { content } => ("system", json!({"role": "system", "content": content})),
        Message::User { content } => (
            "user",
            json!({"role": "user", "content": claude_content(content)}),
        ),
        Message::Assistant {
            content,
            thinking,
            tool_calls,
        } => {
            let mut blocks = Vec::new();
            if let Some(t) = thinking {
                blocks.push(json!({"type": "thinking", "thinking": t.text}));
            }
            match claude_content(content) {
                Value::String(text) if text.is_empty() => {}
                Value::String(text) => blocks.push(json!({"type": "text", "text": text})),
                Value::Array(parts) => blocks.extend(parts),
                _ => {}
            }
            for call in tool_calls {
                let input: Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": names.claude_name(&call.name),
                    "input": input,
                }));
            }
            ("assistant", json!({"role": "assistant", "content": blocks}))
        }
        Message::Tool(result) => (
            "user",
            json!({"role": "user", "content": [{
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": claude_content(&result.content),
                "is_error": result.is_error,
            }]}),
        ),
    }
}

/// Content as Claude Code writes it in transcripts: a string for text, else content blocks
/// (`text`, `image` and `document` with a base64 or URL `source`). Audio, which Claude Code
/// has no block for, and bytes held only by reference are written as a line describing them.
fn claude_content(content: &Content) -> Value {
    if let Some(text) = content.as_text() {
        return json!(text);
    }
    let blocks = content.parts().iter().map(|part| {
        let source = |m: &Media| match (&m.source, m.base64()) {
            (MediaSource::Url(url), _) => Some(json!({"type": "url", "url": url})),
            (MediaSource::Bytes(_), Some(data)) => {
                Some(json!({"type": "base64", "media_type": m.media_type, "data": data}))
            }
            (MediaSource::Bytes(_), None) => None,
        };
        match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Image(m) => match source(m) {
                Some(source) => json!({"type": "image", "source": source}),
                None => json!({"type": "text", "text": part.describe()}),
            },
            Part::File(m) => match source(m) {
                Some(source) => {
                    let mut block = json!({"type": "document", "source": source});
                    if let Some(name) = &m.name {
                        block["title"] = json!(name);
                    }
                    block
                }
                None => json!({"type": "text", "text": part.describe()}),
            },
            Part::Audio(_) => json!({"type": "text", "text": part.describe()}),
        }
    });
    Value::Array(blocks.collect())
}

/// The text of the last assistant message of a transcript line, for `last_assistant_message`.
fn assistant_text(message: &Message) -> Option<std::borrow::Cow<'_, str>> {
    match message {
        Message::Assistant { content, .. } if !content.is_empty() => Some(content.text()),
        _ => None,
    }
}

impl Engine {
    /// Writes a message added to a run's history to the session's transcript (a sub-agent's run
    /// has one of its own), and remembers an assistant's text for Stop's
    /// `last_assistant_message`.
    pub(crate) fn transcribe(&self, ev: &MessageAdded, ctx: &HookCtx) {
        let claude = &self.claude;
        let session = session_id(ctx);
        let main = claude.transcript_path(&session);
        let sub = ctx
            .parent_run_id()
            .map(|_| claude.agent_transcript_path(&session, ctx.run_id()));
        let message = ev.message();
        claude.transcripts.append(
            Line {
                path: sub.as_deref().unwrap_or(&main),
                session_id: &session,
                cwd: &self.project_dir,
                agent_id: sub.as_ref().map(|_| ctx.run_id()),
            },
            message,
            &claude.tool_names,
            |line| ctx.redact_value(line),
        );
        if let Some(text) = assistant_text(message) {
            let text = text.to_string();
            claude.memo(ctx.run_id(), |m| m.last_assistant = Some(text));
        }
    }
}
