//! `${VAR}` templates: secrets stay names in specs and are read from the environment only when
//! a server is started.

use crate::error::McpError;
use agentry::env_template::{Syntax, expand, from_env};

/// Replaces each `${VAR}` (and `${VAR:-default}`) in `text` with the variable's value. Unset
/// variables without a default are an error naming them (never a value), `place` and `server`.
pub(crate) fn resolve(text: &str, server: &str, place: &str) -> Result<String, McpError> {
    expand(text, Syntax::BRACED, from_env).map_err(|unset| McpError::MissingVar {
        server: server.to_string(),
        var: unset.names.join(", "),
        place: place.to_string(),
    })
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
