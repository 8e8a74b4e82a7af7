//! What the models say is pinned: the first greedy tokens for a fixed prompt, as candle's
//! reference implementation of each architecture produced them. A change to the forward pass,
//! the kernels or the cache that changes a single token fails here.

use crate::common::{ask, default_model, default_model_cache, smollm2};
use agentry_core::{Model, ModelEvent};
use agentry_local::{CachePrecision, LocalModel, QWEN25_CODER_1_5B};
use futures::StreamExt;

const PROMPT: &str = "Write a short story about a lighthouse keeper who finds a message in a \
                      bottle. Describe the sea, the weather, the keeper's daily routine and the \
                      message itself.";

/// The text of a greedy turn of 48 tokens on [`PROMPT`].
async fn story(model: &LocalModel) -> String {
    let mut request = ask(PROMPT);
    request.params.max_tokens = Some(48);
    let mut stream = model.stream(&request);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let ModelEvent::TextDelta(piece) = event.expect("the turn succeeds") {
            text.push_str(&piece);
        }
    }
    text
}

#[tokio::test]
async fn smollm2_llama_q4_1_says_what_the_reference_said() {
    assert_eq!(
        story(&smollm2().await).await,
        "The sun dipped below the horizon, casting a golden glow over the deserted lighthouse. \
         The sea was calm and peaceful, with only a few wisps of seaweed drifting lazily across \
         the surface. The keeper's daily routine was simple yet demanding:"
    );
}

#[tokio::test]
async fn the_default_qwen2_q4_k_m_model_says_what_the_reference_said() {
    assert_eq!(
        story(&default_model().await).await,
        "Once upon a time, in the vast ocean, there was a lighthouse keeper named Jack. He lived \
         on an island off the coast of Scotland, surrounded by the endless blue sea and the \
         gentle waves that washed over his wooden house every day"
    );
}

#[tokio::test]
async fn the_default_model_with_an_f16_cache_still_says_what_the_reference_said() {
    // Half-precision keys and values change the logits' last bits; the default model's greedy
    // choices on this prompt hold.
    let cache = default_model_cache().await;
    let model = LocalModel::in_cache(&cache, &QWEN25_CODER_1_5B)
        .expect("the default model is in the cache")
        .cache_precision(CachePrecision::F16)
        .load_async()
        .await
        .expect("the default model loads");
    assert_eq!(
        story(&model).await,
        "Once upon a time, in the vast ocean, there was a lighthouse keeper named Jack. He lived \
         on an island off the coast of Scotland, surrounded by the endless blue sea and the \
         gentle waves that washed over his wooden house every day"
    );
}
