//! Finding a marker in a stream of bytes that arrives in pieces.

/// Looks for the first occurrence of a marker across the pieces fed to it, keeping the end of
/// the previous piece so a marker split between two reads is found too.
#[derive(Debug)]
pub(crate) struct MarkerSearch {
    marker: Vec<u8>,
    tail: Vec<u8>,
}

impl MarkerSearch {
    pub(crate) fn new(marker: &[u8]) -> Self {
        MarkerSearch {
            marker: marker.to_vec(),
            tail: Vec::new(),
        }
    }

    /// Feeds the next piece; when the marker ends in it, returns how many bytes of the piece
    /// reach the marker's end.
    pub(crate) fn feed(&mut self, piece: &[u8]) -> Option<usize> {
        if self.marker.is_empty() {
            return Some(0);
        }
        let mut joined = std::mem::take(&mut self.tail);
        let carried = joined.len();
        joined.extend_from_slice(piece);
        if let Some(at) = crate::http::find(&joined, &self.marker) {
            return Some(at + self.marker.len() - carried);
        }
        let keep = (self.marker.len() - 1).min(joined.len());
        self.tail = joined.split_off(joined.len() - keep);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_found_within_a_piece_and_across_pieces() {
        let mut search = MarkerSearch::new(b"Lisbon");
        assert_eq!(search.feed(b"to Lisbon, then"), Some(9));
        let mut search = MarkerSearch::new(b"Lisbon");
        assert_eq!(search.feed(b"data: \"Li"), None);
        assert_eq!(search.feed(b"s"), None);
        assert_eq!(search.feed(b"bon\"}\n\n"), Some(3));
        let mut search = MarkerSearch::new(b"ab");
        assert_eq!(search.feed(b"xxa"), None);
        assert_eq!(search.feed(b"b"), Some(1));
    }
}
