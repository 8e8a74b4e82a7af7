//! The request the encoders' unit tests start from.

use agentry_core::{Message, ModelRequest, ToolSpec};
use serde_json::json;
use std::sync::Arc;

/// A request with `messages`, the system prompt "Be brief." and the tool `get_weather`.
pub(crate) fn weather_request(messages: impl IntoIterator<Item = Message>) -> ModelRequest {
    let mut request = ModelRequest::new(messages.into_iter().collect());
    request.system = Some("Be brief.".into());
    request.tools = Arc::from(vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        parameters: json!({"type": "object"}),
    }]);
    request
}
