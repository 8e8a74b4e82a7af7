//! The text left once the accepted calls are taken out of it.

use std::ops::Range;

/// `text` without `spans` (sorted, disjoint), trimmed; a run of three or more newlines where
/// a span was removed collapses to two.
pub(super) fn remove_spans(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for span in spans {
        join(&mut out, &text[from..span.start]);
        from = span.end;
    }
    join(&mut out, &text[from..]);
    out.trim().to_string()
}

/// Appends `next` to `out` where a span was removed: when the whitespace around the seam
/// holds three or more newlines it becomes a blank line (keeping the indentation of `next`'s
/// first line).
fn join(out: &mut String, next: &str) {
    let left = out.len() - out.trim_end().len();
    let right = next.len() - next.trim_start().len();
    let newlines =
        out[out.len() - left..].matches('\n').count() + next[..right].matches('\n').count();
    if newlines < 3 {
        out.push_str(next);
        return;
    }
    out.truncate(out.len() - left);
    out.push_str("\n\n");
    let indent = next[..right].rfind('\n').map_or(0, |last| last + 1);
    out.push_str(&next[indent..]);
}

/// Whether what is left around accepted calls is only their wrapping: brackets, braces, and
/// tags with nothing inside (`<tools></tools>`, `<response>`), as small models write them.
pub(super) fn is_residue(text: &str) -> bool {
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || "{}[]".contains(c));
        if rest.is_empty() {
            return true;
        }
        let tag = rest.strip_prefix('<').and_then(|r| r.split_once('>'));
        match tag {
            Some((name, after)) if is_tag_name(name) => rest = after,
            _ => return false,
        }
    }
}

/// Whether `name` is the inside of an XML-like tag: `tools`, `/response`, `tool_call`.
fn is_tag_name(name: &str) -> bool {
    let name = name.strip_prefix('/').unwrap_or(name);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
