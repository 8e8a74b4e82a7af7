//! Durations written as people write them: `"30s"`, `"5m"`, `"1h 30m"`, `"250ms"`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::time::Duration;

/// A duration in a config file, written with units (`"30s"`, `"2m"`, `"500ms"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(HumanDuration)
            .map_err(|e| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a duration ({e}); write a number with a unit: \"30s\", \"5m\", \"250ms\""
                ))
            })
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with units: \"30s\", \"5m\", \"1h 30m\", \"250ms\".",
            "pattern": "^\\s*[0-9]+\\s*[a-zµ]+(\\s*[0-9]+\\s*[a-zµ]+)*\\s*$",
            "examples": ["30s", "5m"]
        })
    }
}
