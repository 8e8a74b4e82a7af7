//! `${VAR}` templates: secrets stay names in specs and are read from the environment only when
//! a server is started.

use crate::error::McpError;

/// Replaces each `${VAR}` (and `${VAR:-default}`) in `text` with the variable's value. An unset
/// variable without a default is an error naming it (never its value), `place` and `server`.
pub(crate) fn resolve(text: &str, server: &str, place: &str) -> Result<String, McpError> {
    if !text.contains("${") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(name), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) => out.push_str(default),
            (Err(_), None) => {
                return Err(McpError::MissingVar {
                    server: server.to_string(),
                    var: name.to_string(),
                    place: place.to_string(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_names_missing() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(resolve("a${PATH}b", "s", "x").unwrap(), format!("a{path}b"));
        assert_eq!(
            resolve("${AGENTRY_SURELY_UNSET_1:-d}", "s", "x").unwrap(),
            "d"
        );
        let e = resolve(
            "Bearer ${AGENTRY_SURELY_UNSET_2}",
            "srv",
            "header Authorization",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("AGENTRY_SURELY_UNSET_2") && e.contains("srv"),
            "{e}"
        );
    }
}
