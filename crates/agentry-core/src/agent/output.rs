//! Structured output: the final answer must parse as JSON and match the output type's schema.

use serde_json::Value;
use std::sync::Arc;

/// The schema a structured final answer must match, compiled.
#[derive(Clone)]
pub struct OutputSpec {
    /// The JSON Schema (sent to the model with each request).
    pub schema: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for OutputSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSpec")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSpec {
    /// Compiles a schema.
    pub fn new(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(OutputSpec {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// Reads a final answer: JSON (bare, or in a Markdown code fence) that matches the schema.
    /// On failure, returns the message to send back to the model.
    pub fn check(&self, text: &str) -> Result<Value, String> {
        let body = strip_fence(text);
        let value: Value = serde_json::from_str(body).map_err(|e| {
            format!("Your final answer is not valid JSON ({e}). Answer with only a JSON value that matches this schema: {}", self.schema)
        })?;
        match crate::schema_violations(&self.validator, &value) {
            None => Ok(value),
            Some(violations) => Err(format!(
                "Your final answer does not match the required schema: {violations}. Answer again with only a JSON value that matches: {}",
                self.schema
            )),
        }
    }
}

/// The JSON body of an answer: the whole text, or else the first Markdown code fence in it
/// (models often wrap JSON in ```json fences, sometimes with a sentence around them).
fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    if t.starts_with('{') || t.starts_with('[') || !t.contains("```") {
        return t;
    }
    let after_open = &t[t.find("```").map_or(0, |i| i + 3)..];
    let body = after_open.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    match body.find("```") {
        Some(end) => body[..end].trim(),
        None => body.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> OutputSpec {
        OutputSpec::new(
            json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}),
        )
        .unwrap()
    }

    #[test]
    fn accepts_bare_and_fenced_json() {
        assert_eq!(spec().check(r#"{"n": 3}"#).unwrap(), json!({"n": 3}));
        assert_eq!(
            spec().check("```json\n{\"n\": 4}\n```").unwrap(),
            json!({"n": 4})
        );
    }

    #[test]
    fn rejects_with_a_message_naming_the_problem() {
        let e = spec().check(r#"{"n": "x"}"#).unwrap_err();
        assert!(e.contains("/n"), "{e}");
        let e = spec().check("not json").unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
    }
}
