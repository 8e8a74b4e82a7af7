//! Messages for what went wrong, shared by the hook engine, runtimes and clients: the text of a
//! caught panic, the violations of a JSON Schema, an error with its causes.

use serde_json::Value;
use std::any::Any;

/// The message of a caught panic (its `&str` or `String` payload).
pub fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// What is wrong with `value` for `validator`, one clause per violation (prefixed with its JSON
/// Pointer when not at the root), joined by `; `; `None` when the value is valid.
pub fn schema_violations(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    let violations: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    (!violations.is_empty()).then(|| violations.join("; "))
}

/// `error` and the errors under it (its `source()` chain), joined with `: `, each cause left out
/// when the text already holds it: an HTTP client's own message often says only that a request
/// failed, and its causes say why (a reset connection, an answer that is not HTTP).
pub fn error_with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
