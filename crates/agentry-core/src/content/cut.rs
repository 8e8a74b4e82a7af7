//! Cutting content whose text is too long to keep, with a note that says what was left out.

use super::{Content, Part};

impl Content {
    /// The bytes of text the content holds (its text parts; media left out).
    pub fn text_len(&self) -> usize {
        self.0.iter().filter_map(Part::as_text).map(str::len).sum()
    }

    /// Keeps at most `max_bytes` of the content's text (cut at a character boundary; later text
    /// parts go, media stays) and adds `note` as text after it. Returns the text's length
    /// before the cut, or `None` (and changes nothing) when it fit.
    ///
    /// ```
    /// use agentry_core::content::Content;
    /// let mut c = Content::from("héllo world");
    /// assert_eq!(c.cut_text(3, "[cut]"), Some(12));
    /// assert_eq!(c.text(), "hé\n[cut]");
    /// assert_eq!(c.cut_text(100, "[cut]"), None);
    /// ```
    pub fn cut_text(&mut self, max_bytes: usize, note: &str) -> Option<usize> {
        let len = self.text_len();
        if len <= max_bytes {
            return None;
        }
        let mut room = max_bytes;
        self.0.retain_mut(|part| {
            let Part::Text(text) = part else {
                return true;
            };
            if text.len() <= room {
                room -= text.len();
                return true;
            }
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            room = 0;
            !text.is_empty()
        });
        self.0.push(Part::Text(note.to_owned()));
        Some(len)
    }
}
