//! The answer's markdown, styled for a terminal as it streams: fenced code blocks, headings,
//! list bullets, `inline code` and **bold**. Text is styled as it arrives, never held back
//! beyond the one character that may start a `**`, so streaming stays live; the styling of a
//! piece never depends on how the stream was cut into pieces.

use anstyle::{AnsiColor, Style};

const CODE: Style = AnsiColor::Yellow.on_default();
const FENCE: Style = Style::new().dimmed();
const HEADING: Style = Style::new().bold().underline();
const BOLD: Style = Style::new().bold();
const BULLET: Style = AnsiColor::Cyan.on_default();

/// Where the styler is in the current line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// At the start of a line: its first characters decide what it is.
    Start,
    /// In a line whose kind is decided.
    Line,
}

/// A streaming markdown styler: [`push`](Self::push) each piece of text, write what it returns.
#[derive(Default)]
pub(crate) struct Markdown {
    /// The start of the current line, held while it may still be a fence, heading or bullet.
    head: String,
    at: Option<At>,
    /// Inside a fenced code block.
    in_block: bool,
    /// The current line is a fence (```), a heading, or code of a block.
    line_style: Option<Style>,
    /// Inside `inline code`.
    in_code: bool,
    /// Inside **bold**.
    in_bold: bool,
    /// A `*` that may open or close a `**`.
    star: bool,
}

impl Markdown {
    /// A styler at the start of the answer.
    pub(crate) fn new() -> Self {
        Markdown {
            at: Some(At::Start),
            ..Markdown::default()
        }
    }

    /// Styles `text`, the next piece of the answer; returns what to write now.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            self.char(c, &mut out);
        }
        out
    }

    /// Ends the answer: writes what is held and closes every style.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        if self.at == Some(At::Start) && !self.head.is_empty() {
            self.decide(&mut out);
        }
        if self.star {
            self.star = false;
            out.push('*');
        }
        self.close_all(&mut out);
        *self = Markdown::new();
        out
    }

    fn char(&mut self, c: char, out: &mut String) {
        if self.at == Some(At::Start) {
            if c == '\n' {
                self.decide(out);
                self.end_line(out);
                return;
            }
            self.head.push(c);
            // A line's start decides its kind once it cannot be a longer marker.
            if !could_be_marker(&self.head) {
                self.decide(out);
            }
            return;
        }
        if c == '\n' {
            self.end_line(out);
            return;
        }
        self.inline(c, out);
    }

    /// Decides the current line's kind from its held start, and writes that start.
    fn decide(&mut self, out: &mut String) {
        let head = std::mem::take(&mut self.head);
        self.at = Some(At::Line);
        let trimmed = head.trim_start();
        if trimmed.starts_with("```") {
            self.in_block = !self.in_block;
            self.line_style = Some(FENCE);
            open(out, FENCE);
            out.push_str(&head);
            return;
        }
        if self.in_block {
            self.line_style = Some(CODE);
            open(out, CODE);
            out.push_str(&head);
            return;
        }
        if trimmed.starts_with('#') && trimmed.trim_start_matches('#').starts_with(' ') {
            self.line_style = Some(HEADING);
            open(out, HEADING);
            out.push_str(trimmed.trim_start_matches('#').trim_start());
            return;
        }
        let indent = &head[..head.len() - trimmed.len()];
        if let Some(rest) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
        {
            out.push_str(indent);
            open(out, BULLET);
            out.push('•');
            close(out, BULLET);
            out.push(' ');
            for c in rest.chars() {
                self.inline(c, out);
            }
            return;
        }
        for c in head.chars() {
            self.inline(c, out);
        }
    }

    /// One character of a line's text: `inline code` and **bold** are styled.
    fn inline(&mut self, c: char, out: &mut String) {
        if self.line_style.is_some() {
            out.push(c);
            return;
        }
        if self.star {
            self.star = false;
            if c == '*' && !self.in_code {
                self.in_bold = !self.in_bold;
                if self.in_bold {
                    open(out, BOLD);
                } else {
                    close(out, BOLD);
                    self.reopen(out);
                }
                return;
            }
            out.push('*');
        }
        match c {
            '`' => {
                self.in_code = !self.in_code;
                if self.in_code {
                    open(out, CODE);
                } else {
                    close(out, CODE);
                    self.reopen(out);
                }
            }
            '*' if !self.in_code => self.star = true,
            _ => out.push(c),
        }
    }

    /// Opens again the styles a reset closed.
    fn reopen(&self, out: &mut String) {
        if self.in_bold {
            open(out, BOLD);
        }
        if self.in_code {
            open(out, CODE);
        }
    }

    fn end_line(&mut self, out: &mut String) {
        if self.star {
            self.star = false;
            out.push('*');
        }
        // Inline styles do not cross lines: markdown closes them at a paragraph's end anyway.
        self.close_all(out);
        out.push('\n');
        self.at = Some(At::Start);
    }

    fn close_all(&mut self, out: &mut String) {
        if let Some(style) = self.line_style.take() {
            close(out, style);
        }
        if self.in_code || self.in_bold {
            out.push_str(&format!("{}", Style::new().render_reset()));
        }
        self.in_code = false;
        self.in_bold = false;
    }
}

/// True while `head` (the start of a line) may still become a fence, heading or bullet.
fn could_be_marker(head: &str) -> bool {
    let trimmed = head.trim_start();
    if trimmed.is_empty() {
        return head.len() < 8;
    }
    let fence = "```";
    (fence.starts_with(trimmed))
        || (trimmed.chars().all(|c| c == '#') && trimmed.len() <= 6)
        || trimmed == "-"
        || trimmed == "*"
}

fn open(out: &mut String, style: Style) {
    out.push_str(&format!("{}", style.render()));
}

fn close(out: &mut String, style: Style) {
    out.push_str(&format!("{}", style.render_reset()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text a terminal shows: the output without its escape sequences.
    fn visible(styled: &str) -> String {
        let re = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
        re.replace_all(styled, "").into_owned()
    }

    fn whole(text: &str) -> String {
        let mut md = Markdown::new();
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    const ANSWER: &str = "# Plan\n\nRun **all** the `cargo test` suites:\n\n- unit tests\n  * nested **item**\n\n```rust\nlet x = 2 * 3; // `not code style`\n```\nDone, 2 * 3 = 6.";

    #[test]
    fn markers_become_styles_and_the_words_stay() {
        let shown = visible(&whole(ANSWER));
        assert_eq!(
            shown,
            "Plan\n\nRun all the cargo test suites:\n\n• unit tests\n  • nested item\n\n```rust\nlet x = 2 * 3; // `not code style`\n```\nDone, 2 * 3 = 6."
        );
        let styled = whole(ANSWER);
        assert!(
            styled.contains(&format!("{}all", BOLD.render())),
            "{styled:?}"
        );
        assert!(
            styled.contains(&format!("{}cargo test", CODE.render())),
            "{styled:?}"
        );
        assert!(
            styled.contains(&format!("{}let x", CODE.render())),
            "code block lines are code: {styled:?}"
        );
    }

    #[test]
    fn the_output_does_not_depend_on_how_the_stream_is_cut() {
        let expected = whole(ANSWER);
        let chars: Vec<char> = ANSWER.chars().collect();
        for size in 1..=7 {
            let mut md = Markdown::new();
            let mut out = String::new();
            for piece in chars.chunks(size) {
                out.push_str(&md.push(&piece.iter().collect::<String>()));
            }
            out.push_str(&md.finish());
            assert_eq!(out, expected, "pieces of {size}");
        }
    }

    #[test]
    fn text_is_not_held_back_beyond_a_lines_marker() {
        let mut md = Markdown::new();
        assert_eq!(visible(&md.push("Hello wor")), "Hello wor");
        assert_eq!(visible(&md.push("ld")), "ld");
        // A line's start waits only while it may be a marker.
        assert_eq!(visible(&md.push("\n#")), "\n");
        assert_eq!(visible(&md.push("# Title")), "Title");
    }
}
