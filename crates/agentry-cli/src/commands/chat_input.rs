//! The lines `agentry chat` reads: on a terminal through a line editor (arrow keys, history
//! kept across chats in `~/.agentry/chat_history`), else plain lines from stdin.

use super::{Failure, failed};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

/// Where the chat's lines come from.
pub(crate) enum ChatInput {
    /// A person at a terminal.
    Editor(Option<Box<DefaultEditor>>),
    /// A pipe or a file.
    Lines(Lines<BufReader<Stdin>>),
}

/// The history file of the line editor.
fn history_path() -> std::path::PathBuf {
    crate::config::agentry_home().join("chat_history")
}

impl ChatInput {
    /// A line editor when `interactive` (and the terminal allows one), else stdin's lines.
    pub(crate) fn new(interactive: bool) -> ChatInput {
        if interactive && let Ok(mut editor) = DefaultEditor::new() {
            let _ = editor.load_history(&history_path());
            return ChatInput::Editor(Some(Box::new(editor)));
        }
        ChatInput::Lines(BufReader::new(tokio::io::stdin()).lines())
    }

    /// The next line; `None` at the end of input (Ctrl-D).
    pub(crate) async fn next_line(&mut self) -> Result<Option<String>, Failure> {
        match self {
            ChatInput::Lines(lines) => lines
                .next_line()
                .await
                .map_err(|e| failed(format!("cannot read stdin: {e}"))),
            ChatInput::Editor(slot) => {
                let Some(mut editor) = slot.take() else {
                    return Ok(None);
                };
                // The editor blocks on the terminal: on a thread of its own, not the runtime's.
                let (editor, line) = tokio::task::spawn_blocking(move || {
                    let line = loop {
                        match editor.readline("> ") {
                            Ok(line) => break Ok(Some(line)),
                            Err(ReadlineError::Interrupted) => {
                                eprintln!("(Ctrl-D or /exit ends the chat)");
                            }
                            Err(ReadlineError::Eof) => break Ok(None),
                            Err(e) => break Err(e),
                        }
                    };
                    if let Ok(Some(line)) = &line
                        && !line.trim().is_empty()
                    {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    (editor, line)
                })
                .await
                .map_err(|e| failed(format!("the line editor stopped: {e}")))?;
                *slot = Some(editor);
                line.map_err(|e| failed(format!("cannot read the terminal: {e}")))
            }
        }
    }

    /// Keeps the line editor's history for the next chat.
    pub(crate) fn save(&mut self) {
        if let ChatInput::Editor(Some(editor)) = self {
            let path = history_path();
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = editor.save_history(&path) {
                eprintln!("warning: chat history not kept in {}: {e}", path.display());
            }
        }
    }
}
