//! Turning generated tokens into text piece by piece, without splitting a character that spans
//! several tokens.

use tokenizers::Tokenizer;

/// Incremental decoding: each new token yields the text it completes, if any.
pub(crate) struct Detokenizer<'a> {
    tokenizer: &'a Tokenizer,
    tokens: Vec<u32>,
    /// Where the text already returned starts, in `tokens`.
    start: usize,
    /// Where the tokens not yet returned as text start.
    pending: usize,
}

impl<'a> Detokenizer<'a> {
    /// A decoder with no tokens yet.
    pub(crate) fn new(tokenizer: &'a Tokenizer) -> Self {
        Detokenizer {
            tokenizer,
            tokens: Vec::new(),
            start: 0,
            pending: 0,
        }
    }

    /// Adds `token`; returns the text it completes (empty while a character is unfinished).
    pub(crate) fn push(&mut self, token: u32) -> String {
        let decode = |ids: &[u32]| self.tokenizer.decode(ids, true).unwrap_or_default();
        let before = decode(&self.tokens[self.start..self.pending]);
        self.tokens.push(token);
        let now = decode(&self.tokens[self.start..]);
        if now.len() > before.len()
            && !now.ends_with('\u{FFFD}')
            && now.is_char_boundary(before.len())
        {
            let piece = now[before.len()..].to_owned();
            self.start = self.pending;
            self.pending = self.tokens.len();
            piece
        } else {
            String::new()
        }
    }
}
