//! Shared by the tests: SmolLM2-135M from the model cache (fetched on first use; `.ci/run`
//! fetches it before the tests), loaded once per test process.

use agentry_core::{History, Message, ModelRequest, ToolSpec};
use agentry_local::{Fetcher, LocalModel, ModelCache, SMOLLM2_135M};
use serde_json::json;
use tokio::sync::OnceCell;

/// SmolLM2-135M, greedy, loaded once.
pub async fn smollm2() -> LocalModel {
    static MODEL: OnceCell<LocalModel> = OnceCell::const_new();
    MODEL
        .get_or_init(|| async {
            let cache = ModelCache::from_env();
            Fetcher::new(cache.clone())
                .fetch(&SMOLLM2_135M, |_| {})
                .await
                .expect("SmolLM2-135M could not be fetched into the model cache");
            LocalModel::in_cache(&cache, &SMOLLM2_135M)
                .expect("the cached model is usable")
                .load_async()
                .await
                .expect("SmolLM2-135M loads")
        })
        .await
        .clone()
}

/// A request with one user message.
pub fn ask(text: &str) -> ModelRequest {
    let mut history = History::new();
    history.push(Message::user(text));
    ModelRequest::new(history)
}

/// The `get_weather` tool's spec.
pub fn weather_spec() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Today's weather for a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    }
}

/// The default model (Qwen2.5-Coder-1.5B), greedy, loaded once.
pub async fn default_model() -> LocalModel {
    static MODEL: OnceCell<LocalModel> = OnceCell::const_new();
    MODEL
        .get_or_init(|| async {
            let cache = default_model_cache().await;
            LocalModel::in_cache(&cache, &agentry_local::QWEN25_CODER_1_5B)
                .expect("the cached model is usable")
                .load_async()
                .await
                .expect("the default model loads")
        })
        .await
        .clone()
}

/// The model cache, with the default model fetched into it (checked only, when it is there; each
/// test process may be the first to ask, and concurrent fetches are safe).
pub async fn default_model_cache() -> ModelCache {
    let cache = ModelCache::from_env();
    Fetcher::new(cache.clone())
        .fetch(&agentry_local::QWEN25_CODER_1_5B, |_| {})
        .await
        .expect("the default model could not be fetched into the model cache");
    cache
}
