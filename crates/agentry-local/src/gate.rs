//! Holding back streamed text that may turn into a tool call.
//!
//! A small model writes its tool calls as text, so while it generates we cannot yet tell a
//! call from prose. [`TextGate`] streams text until the first marker that may start a call
//! (`<tool_call>`, a code fence or a `{`, also a `[` directly followed by `{`) and holds
//! everything from there on; at the end the held text goes through the extractor, which
//! returns what is prose. A few trailing characters that may be the start of a marker (a final
//! `` ` `` or `<tool`) wait for the next piece to decide.

/// The markers that may start a tool call, apart from `[` directly followed by `{` (see
/// [`marker_start`]).
const MARKERS: [&str; 3] = ["<tool_call>", "```", "{"];

/// Splits generated text into what can be streamed now and what is held back because it may
/// be a tool call.
#[derive(Debug, Default)]
pub(crate) struct TextGate {
    /// Whether to hold anything back at all (only when tools are declared).
    active: bool,
    /// Whether a marker was seen: everything from it on is held.
    latched: bool,
    /// The text already released.
    streamed: String,
    /// The text not released: everything from the marker when latched, otherwise a tail that
    /// may be the start of a marker.
    held: String,
}

impl TextGate {
    /// A gate; an inactive one lets every piece straight through.
    pub(crate) fn new(active: bool) -> Self {
        TextGate {
            active,
            ..TextGate::default()
        }
    }

    /// Adds a generated piece; returns the text now safe to stream, if any.
    pub(crate) fn push(&mut self, piece: &str) -> Option<String> {
        if !self.active {
            return self.release(piece.to_string());
        }
        self.held.push_str(piece);
        if self.latched {
            return None;
        }
        let split = match marker_start(&self.held) {
            Some(at) => {
                self.latched = true;
                at
            }
            None => undecided_tail(&self.held),
        };
        let rest = self.held.split_off(split);
        let ready = std::mem::replace(&mut self.held, rest);
        self.release(ready)
    }

    /// Ends the text: returns what was streamed and what was held back (to go through the
    /// extractor).
    pub(crate) fn finish(self) -> (String, String) {
        (self.streamed, self.held)
    }

    /// Records `text` as streamed and returns it, or `None` when it is empty.
    fn release(&mut self, text: String) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        self.streamed.push_str(&text);
        Some(text)
    }
}

/// Where the first marker in `text` starts: one of [`MARKERS`], or a `[` followed (after any
/// whitespace) by `{`.
fn marker_start(text: &str) -> Option<usize> {
    let marker = MARKERS.iter().filter_map(|marker| text.find(marker)).min();
    let bracket = text
        .match_indices('[')
        .map(|(at, _)| at)
        .find(|&at| text[at + 1..].trim_start().starts_with('{'));
    marker.into_iter().chain(bracket).min()
}

/// Where the tail of `text` that may still grow into a marker starts (`text.len()` when there
/// is none): a proper prefix of a marker, or a `[` followed only by whitespace.
fn undecided_tail(text: &str) -> usize {
    let longest = MARKERS.iter().map(|marker| marker.len()).max().unwrap_or(1);
    let prefix = (text.len().saturating_sub(longest - 1)..text.len())
        .filter(|&at| text.is_char_boundary(at))
        .find(|&at| {
            let tail = &text[at..];
            MARKERS
                .iter()
                .any(|marker| marker.len() > tail.len() && marker.starts_with(tail))
        });
    let bracket = text
        .rfind('[')
        .filter(|&at| text[at + 1..].trim().is_empty());
    prefix
        .into_iter()
        .chain(bracket)
        .min()
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `pieces` through an active gate; returns what each push released and the final
    /// `(streamed, held)`.
    fn run(pieces: &[&str]) -> (Vec<Option<String>>, (String, String)) {
        let mut gate = TextGate::new(true);
        let released = pieces.iter().map(|piece| gate.push(piece)).collect();
        (released, gate.finish())
    }

    /// `Some(text)` as an owned string.
    fn some(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn inactive_gate_passes_everything_through() {
        let mut gate = TextGate::new(false);
        assert_eq!(gate.push("```json\n{"), some("```json\n{"));
        assert_eq!(gate.push("<tool_call>"), some("<tool_call>"));
        assert_eq!(gate.push(""), None);
        assert_eq!(
            gate.finish(),
            ("```json\n{<tool_call>".to_string(), String::new())
        );
    }

    #[test]
    fn plain_prose_passes_piece_by_piece() {
        let pieces = [
            "The ",
            "weather ",
            "in Lisbon ",
            "is sunny",
            " (mostly) [1].",
            "\n",
        ];
        let (released, (streamed, held)) = run(&pieces);
        let expected: Vec<_> = pieces.iter().map(|piece| some(piece)).collect();
        assert_eq!(released, expected);
        assert_eq!(streamed, pieces.concat());
        assert_eq!(held, "");
    }

    #[test]
    fn marker_split_across_pieces_is_caught() {
        let (released, (streamed, held)) = run(&["Here:\n``", "`json\n{\"name\"", ": 1}\n```"]);
        assert_eq!(released, vec![some("Here:\n"), None, None]);
        assert_eq!(streamed, "Here:\n");
        assert_eq!(held, "```json\n{\"name\": 1}\n```");
    }

    #[test]
    fn prose_then_fenced_call_holds_the_fence() {
        let (released, (streamed, held)) = run(&[
            "Let me check ",
            "the weather.\n",
            "```json\n",
            "{\"name\": \"get_weather\"}\n```",
            "\nDone.",
        ]);
        assert_eq!(
            released,
            vec![
                some("Let me check "),
                some("the weather.\n"),
                None,
                None,
                None
            ]
        );
        assert_eq!(streamed, "Let me check the weather.\n");
        assert_eq!(held, "```json\n{\"name\": \"get_weather\"}\n```\nDone.");
    }

    #[test]
    fn lone_angle_bracket_is_released_once_decided() {
        let (released, (streamed, held)) = run(&["a <", "b> c"]);
        assert_eq!(released, vec![some("a "), some("<b> c")]);
        assert_eq!(streamed, "a <b> c");
        assert_eq!(held, "");
    }

    #[test]
    fn tag_split_across_pieces_is_caught() {
        let (released, (_, held)) = run(&["Ok.<tool", "_ca", "ll>\n{\"name\""]);
        assert_eq!(released, vec![some("Ok."), None, None]);
        assert_eq!(held, "<tool_call>\n{\"name\"");
    }

    #[test]
    fn brace_latches_in_the_middle_of_a_piece() {
        let (released, (streamed, held)) = run(&["Calling: {\"name\": ", "\"get_time\"}", " ok"]);
        assert_eq!(released, vec![some("Calling: "), None, None]);
        assert_eq!(streamed, "Calling: ");
        assert_eq!(held, "{\"name\": \"get_time\"} ok");
    }

    #[test]
    fn bracket_before_a_brace_is_held_with_it() {
        let (released, (_, held)) = run(&["List: [", " ", "{\"name\""]);
        assert_eq!(released, vec![some("List: "), None, None]);
        assert_eq!(held, "[ {\"name\"");
        let (released, _) = run(&["see [", "2]"]);
        assert_eq!(released, vec![some("see "), some("[2]")]);
    }

    #[test]
    fn undecided_tail_is_held_at_the_end() {
        let (released, (streamed, held)) = run(&["end with ``"]);
        assert_eq!(released, vec![some("end with ")]);
        assert_eq!((streamed.as_str(), held.as_str()), ("end with ", "``"));
    }

    #[test]
    fn multibyte_text_is_never_split() {
        let (released, (streamed, held)) = run(&["olá — ", "日本語 <", "✓ `", "é{ü"]);
        assert_eq!(
            released,
            vec![some("olá — "), some("日本語 "), some("<✓ "), some("`é")]
        );
        assert_eq!(streamed, "olá — 日本語 <✓ `é");
        assert_eq!(held, "{ü");
    }
}
