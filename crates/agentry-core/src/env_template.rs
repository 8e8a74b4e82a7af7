//! `${NAME}` templates: text that names environment variables (secrets, endpoints) and keeps
//! naming them in every stored or serialized spec, resolved only when the value is used.
//!
//! One parser for every place agentry reads such text (`agentry.toml`, `.mcp.json`, webhook
//! specs), each with the forms its format admits ([`Syntax`]). A name is a letter or `_`
//! followed by letters, digits and `_`; anything that is not a reference (`$5`, `${`, `${1A}`,
//! a lone `$`) is text, kept as written.
//!
//! ```
//! use agentry_core::env_template::{Syntax, expand, references};
//!
//! let env = |name: &str| (name == "TOKEN").then(|| "t0k".to_string());
//! assert_eq!(expand("Bearer ${TOKEN}", Syntax::BRACED, env).unwrap(), "Bearer t0k");
//! assert_eq!(expand("${REGION:-eu}", Syntax::BRACED, env).unwrap(), "eu");
//! assert_eq!(expand("$TOKEN", Syntax::SHELL, env).unwrap(), "t0k");
//! assert_eq!(expand("$TOKEN", Syntax::BRACED, env).unwrap(), "$TOKEN");
//! assert_eq!(expand("${A}${B}", Syntax::BRACED, env).unwrap_err().names, ["A", "B"]);
//! assert_eq!(references("a $B ${C_1} $9", Syntax::SHELL), ["B", "C_1"]);
//! ```

/// The forms of reference a template admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syntax {
    /// `$NAME` as well as `${NAME}`.
    pub bare: bool,
    /// `${NAME:-default}`: the default when the variable is not set.
    pub defaults: bool,
}

impl Syntax {
    /// `${NAME}` and `${NAME:-default}`: configuration files (`agentry.toml`, `.mcp.json`).
    pub const BRACED: Syntax = Syntax {
        bare: false,
        defaults: true,
    };
    /// `$NAME` and `${NAME}`, no defaults: header values as Claude Code's settings write them.
    pub const SHELL: Syntax = Syntax {
        bare: true,
        defaults: false,
    };
}

/// One piece of a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Var {
        name: &'a str,
        default: Option<&'a str>,
    },
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The name at the start of `bytes[from..]`: its end (exclusive), when there is one.
fn name_end(bytes: &[u8], from: usize) -> Option<usize> {
    if !bytes.get(from).copied().is_some_and(is_name_start) {
        return None;
    }
    let mut end = from + 1;
    while end < bytes.len() && is_name_char(bytes[end]) {
        end += 1;
    }
    Some(end)
}

/// The reference at `text[i..]` (which starts with `$`): the piece and where it ends.
fn reference(text: &str, i: usize, syntax: Syntax) -> Option<(Piece<'_>, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(i + 1) == Some(&b'{') {
        let start = i + 2;
        let end = name_end(bytes, start)?;
        let name = &text[start..end];
        match bytes.get(end) {
            Some(b'}') => Some((
                Piece::Var {
                    name,
                    default: None,
                },
                end + 1,
            )),
            Some(b':') if syntax.defaults && bytes.get(end + 1) == Some(&b'-') => {
                let close = text[end + 2..].find('}')? + end + 2;
                let default = Some(&text[end + 2..close]);
                Some((Piece::Var { name, default }, close + 1))
            }
            _ => None,
        }
    } else if syntax.bare {
        let end = name_end(bytes, i + 1)?;
        Some((
            Piece::Var {
                name: &text[i + 1..end],
                default: None,
            },
            end,
        ))
    } else {
        None
    }
}

/// Splits `text` into literal text and references.
fn pieces(text: &str, syntax: Syntax) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let (mut i, mut literal) = (0, 0);
    while let Some(at) = text[i..].find('$').map(|at| at + i) {
        match reference(text, at, syntax) {
            Some((piece, end)) => {
                if literal < at {
                    out.push(Piece::Text(&text[literal..at]));
                }
                out.push(piece);
                (i, literal) = (end, end);
            }
            None => i = at + 1,
        }
    }
    if literal < text.len() {
        out.push(Piece::Text(&text[literal..]));
    }
    out
}

/// The names of the variables `text` refers to, in order.
pub fn references(text: &str, syntax: Syntax) -> Vec<&str> {
    pieces(text, syntax)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var { name, .. } => Some(name),
            Piece::Text(_) => None,
        })
        .collect()
}

/// The variables a template needs that are not set (and have no default): their names, once
/// each, in order — never a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unset {
    /// The names.
    pub names: Vec<String>,
}

impl std::fmt::Display for Unset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.names.as_slice() {
            [one] => write!(f, "the environment variable {one} is not set"),
            names => write!(
                f,
                "the environment variables {} are not set",
                names.join(", ")
            ),
        }
    }
}

impl std::error::Error for Unset {}

/// Expands `text`: each reference is replaced with what `resolve` gives for its name, or its
/// default; a name `resolve` has nothing for and no default is reported in [`Unset`].
pub fn expand(
    text: &str,
    syntax: Syntax,
    mut resolve: impl FnMut(&str) -> Option<String>,
) -> Result<String, Unset> {
    if !text.contains('$') {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut unset: Vec<String> = Vec::new();
    for piece in pieces(text, syntax) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var { name, default } => match (resolve(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    if !unset.iter().any(|n| n == name) {
                        unset.push(name.to_string());
                    }
                }
            },
        }
    }
    match unset.is_empty() {
        true => Ok(out),
        false => Err(Unset { names: unset }),
    }
}

/// The process environment, as templates read it: a variable's value when it is set.
pub fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn shell_forms_and_text_around_them() {
        let s = Syntax::SHELL;
        assert_eq!(expand("Bearer $TOKEN", s, env).unwrap(), "Bearer t0k");
        assert_eq!(expand("Bearer ${TOKEN}x", s, env).unwrap(), "Bearer t0kx");
        assert_eq!(expand("$TOKEN-$EMPTY.", s, env).unwrap(), "t0k-.");
        assert_eq!(
            expand("$ 5$1 ${ ${1A} $", s, env).unwrap(),
            "$ 5$1 ${ ${1A} $"
        );
        // No defaults in this syntax: `${X:-d}` is text.
        assert_eq!(expand("${TOKEN:-d}", s, env).unwrap(), "${TOKEN:-d}");
        assert_eq!(references("a $B ${C_1} $9 ${D", s), ["B", "C_1"]);
    }

    #[test]
    fn braced_forms_with_defaults() {
        let s = Syntax::BRACED;
        assert_eq!(expand("a${TOKEN}b", s, env).unwrap(), "at0kb");
        assert_eq!(expand("$TOKEN", s, env).unwrap(), "$TOKEN");
        assert_eq!(expand("${NOPE:-x:y}", s, env).unwrap(), "x:y");
        assert_eq!(expand("${NOPE:-}", s, env).unwrap(), "");
        assert_eq!(expand("${TOKEN:-unused}", s, env).unwrap(), "t0k");
        assert_eq!(expand("${NOPE:-no end", s, env).unwrap(), "${NOPE:-no end");
        assert_eq!(expand("${TOKEN", s, env).unwrap(), "${TOKEN");
        assert_eq!(expand("price: $5", s, env).unwrap(), "price: $5");
    }

    #[test]
    fn every_unset_name_is_reported_once_and_no_value() {
        let err = expand("${A}-${TOKEN}-${B}-${A}", Syntax::BRACED, env).unwrap_err();
        assert_eq!(err.names, ["A", "B"]);
        assert_eq!(
            err.to_string(),
            "the environment variables A, B are not set"
        );
        let err = expand("$A", Syntax::SHELL, env).unwrap_err();
        assert_eq!(err.to_string(), "the environment variable A is not set");
    }
}
