//! [`HeldText`]: streamed text held back until it can be masked whole. The redactor masks one
//! piece at a time, so a secret the model streams across two pieces would pass; with a redactor,
//! a run's stream events carry text a line at a time (or, for a long line, up to a space well
//! before its end), masked as a whole. Hooks still see every piece as it came.

use agentry_core::Redact;

/// A line longer than this is sent up to its last space before the last [`TAIL`] bytes.
const LONG_LINE: usize = 1024;

/// How much of a long line is held back: longer than any secret the redactor is likely to mask.
const TAIL: usize = 256;

/// Text received but not yet sent.
#[derive(Default)]
pub(crate) struct HeldText {
    pending: String,
}

impl HeldText {
    /// Takes `piece`; returns the masked text that may be sent now, if any.
    pub(crate) fn push(&mut self, piece: &str, redactor: &dyn Redact) -> Option<String> {
        self.pending.push_str(piece);
        let cut = match self.pending.rfind('\n') {
            Some(newline) => newline + 1,
            None if self.pending.len() > LONG_LINE => {
                let before = floor_char_boundary(&self.pending, self.pending.len() - TAIL);
                self.pending[..before].rfind(char::is_whitespace)? + 1
            }
            None => return None,
        };
        let sent = redactor.redact(&self.pending[..cut]).into_owned();
        self.pending.drain(..cut);
        Some(sent)
    }

    /// What is left, masked, when the stream ends.
    pub(crate) fn flush(&mut self, redactor: &dyn Redact) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let sent = redactor.redact(&self.pending).into_owned();
        self.pending.clear();
        Some(sent)
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// Masks `ACCT-` followed by eight digits.
    struct Accounts;

    impl Redact for Accounts {
        fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
            mask_account(text).map_or(Cow::Borrowed(text), Cow::Owned)
        }
    }

    fn mask_account(text: &str) -> Option<String> {
        let at = text.find("ACCT-")?;
        let digits = text[at + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        (digits == 8).then(|| format!("{}[MASKED]{}", &text[..at], &text[at + 13..]))
    }

    fn stream(pieces: &[&str]) -> Vec<String> {
        let mut held = HeldText::default();
        let mut sent: Vec<String> = pieces
            .iter()
            .filter_map(|p| held.push(p, &Accounts))
            .collect();
        sent.extend(held.flush(&Accounts));
        sent
    }

    #[test]
    fn a_secret_split_across_pieces_is_masked_whole() {
        let sent = stream(&["The account is ACCT-1234", "5678.\nNext", " line."]);
        assert_eq!(sent, ["The account is [MASKED].\n", "Next line."]);
    }

    #[test]
    fn text_goes_out_a_line_at_a_time_and_long_lines_before_their_tail() {
        let long = "word ".repeat(300);
        let sent = stream(&[&long]);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent[0].len() <= long.len() - TAIL && sent[0].ends_with(' '));
        assert_eq!(sent.concat(), long);
        // Nothing of a line without an end or a space is sent before the stream ends.
        let mut held = HeldText::default();
        assert_eq!(held.push(&"x".repeat(2000), &Accounts), None);
        assert_eq!(held.flush(&Accounts).unwrap().len(), 2000);
    }
}
