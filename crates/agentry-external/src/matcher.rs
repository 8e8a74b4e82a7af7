//! Matchers: which tool names (or sources, agent types, triggers) a matcher group applies to.

use regex::Regex;

/// A matcher, read as Claude Code reads one:
/// - `"*"`, `""` or none: everything;
/// - only letters, digits, `_`, `-`, spaces, `,` and `|`: one exact name, or a list of exact
///   names split on `|` or `,` (whitespace around each is ignored);
/// - anything else: a regular expression, unanchored (`Edit.*` also matches `NotebookEdit`;
///   write `^Edit$` for the whole name).
///
/// Matching is case-sensitive.
#[derive(Clone, Debug)]
pub enum Matcher {
    /// Matches everything.
    Any,
    /// Matches one of these names exactly.
    Exact(Vec<String>),
    /// Matches where the expression finds a match anywhere in the name.
    Regex(Regex),
}

impl Matcher {
    /// Reads a matcher; an invalid regular expression is an error that says what is wrong.
    pub fn parse(source: &str) -> Result<Matcher, regex::Error> {
        let trimmed = source.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Matcher::Any);
        }
        let plain = trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
        if plain {
            let names = trimmed
                .split(['|', ','])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect();
            return Ok(Matcher::Exact(names));
        }
        Regex::new(trimmed).map(Matcher::Regex)
    }

    /// True when the matcher applies to `name`.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Exact(names) => names.iter().any(|n| n == name),
            Matcher::Regex(re) => re.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Matcher {
        Matcher::parse(s).unwrap()
    }

    #[test]
    fn everything() {
        for s in ["", "*", "  "] {
            assert!(m(s).matches("Bash"));
        }
    }

    #[test]
    fn exact_names_and_lists() {
        assert!(m("Bash").matches("Bash"));
        assert!(!m("Bash").matches("bash"));
        assert!(!m("Bash").matches("BashOutput"));
        assert!(m("Write|Edit").matches("Edit"));
        assert!(m("Write | Edit, MultiEdit").matches("MultiEdit"));
        assert!(!m("Write|Edit").matches("NotebookEdit"));
        // Hyphenated names are exact too.
        assert!(m("my-tool").matches("my-tool"));
        assert!(!m("my-tool").matches("my-tool-2"));
    }

    #[test]
    fn regexes_are_unanchored() {
        assert!(m("Edit.*").matches("NotebookEdit"));
        assert!(m("^Edit$").matches("Edit"));
        assert!(!m("^Edit$").matches("MultiEdit"));
        assert!(m("mcp__memory__.*").matches("mcp__memory__create"));
        assert!(!m("mcp__memory").matches("mcp__memory__create"));
        assert!(m("Write|Edit.*").matches("MultiEdit"));
    }

    #[test]
    fn a_bad_regex_is_an_error() {
        assert!(Matcher::parse("Edit(").is_err());
    }
}
