//! What a tool call written as a JSON object looks like: the keys that may hold its name and
//! its arguments.

use serde_json::{Map, Value};

/// The keys that may hold the tool name, in order of preference.
const NAME_KEYS: [&str; 3] = ["name", "tool", "function"];
/// The keys that may hold the arguments, in order of preference.
const ARGUMENT_KEYS: [&str; 4] = ["arguments", "parameters", "args", "input"];
/// Keys besides the name that a call without arguments may carry.
const EXTRA_KEYS: [&str; 2] = ["type", "id"];

/// The tool name and arguments an object holds, in any of the accepted shapes: `name` (or
/// `tool`, `function`) with `arguments` (or `parameters`, `args`, `input`) as an object or a
/// string of JSON, or all of it nested under `function`. Missing arguments read as `{}`,
/// unless the object has other keys (then it is more likely data than a call).
pub(super) fn call_parts(object: &Map<String, Value>) -> Option<(&str, Value)> {
    if let Some(Value::Object(function)) = object.get("function") {
        return call_parts(function);
    }
    let (name_key, name) = NAME_KEYS
        .iter()
        .find_map(|key| Some((*key, object.get(*key)?.as_str()?)))?;
    let arguments = ARGUMENT_KEYS
        .iter()
        .find_map(|key| object.get(*key).filter(|value| !value.is_null()));
    let arguments = match arguments {
        Some(Value::String(json)) => serde_json::from_str(json).ok()?,
        Some(value) => value.clone(),
        None if only_call_keys(object, name_key) => Value::Object(Map::new()),
        None => return None,
    };
    Some((name, arguments))
}

/// Whether `object` has no keys besides the name key and the harmless [`EXTRA_KEYS`].
fn only_call_keys(object: &Map<String, Value>, name_key: &str) -> bool {
    object.iter().all(|(key, value)| {
        key == name_key || EXTRA_KEYS.contains(&key.as_str()) || value.is_null()
    })
}
