//! The commands `agentry chat` takes at its prompt: `/clear`, `/compact`, `/model`, `/attach`,
//! `/cost`, `/help`, `/exit`.

/// What `/help` shows.
pub(crate) const HELP: &str = "\
/clear             start a new conversation (a new session: SessionEnd `clear`, then SessionStart `clear`)
/compact           compact the conversation before the next message (the agent's compaction, trigger `manual`)
/model [SPEC]      show the model, or switch to another from the next turn (`/model openai:gpt-4.1-mini`)
/attach PATH       attach a file (an image, a PDF, audio) to your next message
/cost              what this conversation used and cost so far
/help              this list
/exit, /quit       end the conversation (as Ctrl-D does)";

/// A slash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// A new session.
    Clear,
    /// Compact before the next turn.
    Compact,
    /// Show (`None`) or switch the model.
    Model(Option<String>),
    /// Attach this file to the next message.
    Attach(String),
    /// The session's usage and cost.
    Cost,
    /// The list of commands.
    Help,
    /// End the chat.
    Exit,
}

impl Command {
    /// Parses the text after the `/`.
    pub(crate) fn parse(text: &str) -> Result<Command, String> {
        let mut words = text.split_whitespace();
        let name = words.next().unwrap_or_default();
        let rest: Vec<&str> = words.collect();
        let no_argument = |command: Command| match rest.as_slice() {
            [] => Ok(command),
            _ => Err(format!("/{name} takes no argument")),
        };
        match name {
            "clear" | "new" | "reset" => no_argument(Command::Clear),
            "compact" => no_argument(Command::Compact),
            "cost" | "usage" => no_argument(Command::Cost),
            "help" | "?" => no_argument(Command::Help),
            "exit" | "quit" | "q" => no_argument(Command::Exit),
            "attach" | "file" => match rest.as_slice() {
                [] => Err("/attach takes the path of a file (`/attach photo.png`)".into()),
                _ => Ok(Command::Attach(rest.join(" "))),
            },
            "model" => match rest.as_slice() {
                [] => Ok(Command::Model(None)),
                [spec] => Ok(Command::Model(Some((*spec).to_owned()))),
                _ => Err("/model takes one model spec (`/model openai:gpt-4.1-mini`)".into()),
            },
            other => Err(format!(
                "/{other} is not a command; /help lists them (start a line with `//` to send one that starts with `/`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_command_and_names_what_is_wrong() {
        assert_eq!(Command::parse("clear"), Ok(Command::Clear));
        assert_eq!(Command::parse("model"), Ok(Command::Model(None)));
        assert_eq!(
            Command::parse("model  local:qwen"),
            Ok(Command::Model(Some("local:qwen".into())))
        );
        assert_eq!(Command::parse("quit"), Ok(Command::Exit));
        assert!(
            Command::parse("cost now")
                .unwrap_err()
                .contains("no argument")
        );
        assert!(Command::parse("compat").unwrap_err().contains("/help"));
        assert_eq!(Command::parse("compact"), Ok(Command::Compact));
        assert_eq!(
            Command::parse("attach my photo.png"),
            Ok(Command::Attach("my photo.png".into()))
        );
        assert!(Command::parse("attach").unwrap_err().contains("path"));
    }
}
