//! `$NAME` and `${NAME}` references to environment variables in a webhook's header values and
//! secret: kept as written in the spec, resolved only when a delivery is made.

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Splits `text` into literal text and variable references. A `$` that starts no reference
/// (`$1`, `${` without its `}`, a lone `$`) is text.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut literal) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let (name, end) = if bytes.get(i + 1) == Some(&b'{') {
            let start = i + 2;
            let mut j = start;
            while j < bytes.len() && is_name_char(bytes[j]) {
                j += 1;
            }
            if j > start && is_name_start(bytes[start]) && bytes.get(j) == Some(&b'}') {
                (Some(&text[start..j]), j + 1)
            } else {
                (None, i + 1)
            }
        } else if bytes.get(i + 1).copied().is_some_and(is_name_start) {
            let start = i + 1;
            let mut j = start;
            while j < bytes.len() && is_name_char(bytes[j]) {
                j += 1;
            }
            (Some(&text[start..j]), j)
        } else {
            (None, i + 1)
        };
        if let Some(name) = name {
            if literal < i {
                out.push(Piece::Text(&text[literal..i]));
            }
            out.push(Piece::Var(name));
            literal = end;
        }
        i = end;
    }
    if literal < bytes.len() {
        out.push(Piece::Text(&text[literal..]));
    }
    out
}

/// The names of the variables `text` refers to, in order.
pub(crate) fn references(text: &str) -> Vec<&str> {
    pieces(text)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect()
}

/// A variable a template needs that is not set: names the variable, never a value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Missing(pub(crate) String);

/// Expands `text`: a reference to a variable `allowed` admits is replaced with its value from
/// `lookup` (a missing one is an error); any other reference becomes empty, as Claude Code
/// does for header variables not listed in `allowedEnvVars`.
pub(crate) fn expand(
    text: &str,
    allowed: impl Fn(&str) -> bool,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, Missing> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) if allowed(name) => match lookup(name) {
                Some(value) => out.push_str(&value),
                None => return Err(Missing(name.to_string())),
            },
            Piece::Var(_) => {}
        }
    }
    Ok(out)
}

/// The process environment, as templates read it.
pub(crate) fn from_env(name: &str) -> Option<String> {
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
    fn both_forms_and_text_around_them() {
        let all = |_: &str| true;
        assert_eq!(expand("Bearer $TOKEN", all, env).unwrap(), "Bearer t0k");
        assert_eq!(expand("Bearer ${TOKEN}x", all, env).unwrap(), "Bearer t0kx");
        assert_eq!(expand("$TOKEN-$EMPTY.", all, env).unwrap(), "t0k-.");
        assert_eq!(
            expand("$ 5$1 ${ ${1A} $", all, env).unwrap(),
            "$ 5$1 ${ ${1A} $"
        );
        assert_eq!(references("a $B ${C_1} $9 ${D"), ["B", "C_1"]);
    }

    #[test]
    fn unlisted_names_are_empty_and_missing_ones_are_errors() {
        let only_token = |n: &str| n == "TOKEN";
        assert_eq!(expand("$TOKEN:$HOME", only_token, env).unwrap(), "t0k:");
        assert_eq!(
            expand("${NOT_SET}", |_| true, env).unwrap_err(),
            Missing("NOT_SET".into())
        );
    }
}
