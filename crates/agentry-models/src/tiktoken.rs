//! Token counting with OpenAI's tokenizers (`tiktoken`), for prompt sizing and compaction.

use agentry_core::TokenCounter;
use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Counts tokens as an OpenAI model does, with the `tiktoken` encoding of the model.
///
/// The OpenAI clients return one from `Model::token_counter` when their model has a known
/// encoding; use it directly for other OpenAI-compatible servers whose models share one.
///
/// ```
/// use agentry_core::TokenCounter;
/// use agentry_models::Tiktoken;
/// let counter = Tiktoken::for_model("gpt-4o").unwrap();
/// assert_eq!(counter.name(), "tiktoken:o200k_base");
/// assert_eq!(counter.count("hello world"), 2);
/// assert!(Tiktoken::for_model("llama-3").is_none());
/// ```
#[derive(Clone, Copy)]
pub struct Tiktoken {
    name: &'static str,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for Tiktoken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tiktoken").field(&self.name).finish()
    }
}

impl Tiktoken {
    /// The encoding of an OpenAI model (`gpt-4o`, `gpt-4.1-mini`, `o3`, a fine-tune `ft:...`),
    /// or `None` for a model `tiktoken` does not know.
    pub fn for_model(model: &str) -> Option<Self> {
        let name = match get_tokenizer(model)? {
            Tokenizer::O200kBase => "tiktoken:o200k_base",
            Tokenizer::O200kHarmony => "tiktoken:o200k_harmony",
            Tokenizer::Cl100kBase => "tiktoken:cl100k_base",
            Tokenizer::P50kBase => "tiktoken:p50k_base",
            Tokenizer::P50kEdit => "tiktoken:p50k_edit",
            Tokenizer::R50kBase => "tiktoken:r50k_base",
            Tokenizer::Gpt2 => "tiktoken:gpt2",
        };
        let bpe = tiktoken_rs::bpe_for_model(model).ok()?;
        Some(Tiktoken { name, bpe })
    }

    /// The `o200k_base` encoding (GPT-4o, GPT-4.1, o-series).
    pub fn o200k() -> Self {
        Tiktoken {
            name: "tiktoken:o200k_base",
            bpe: tiktoken_rs::o200k_base_singleton(),
        }
    }

    /// The `cl100k_base` encoding (GPT-4, GPT-3.5).
    pub fn cl100k() -> Self {
        Tiktoken {
            name: "tiktoken:cl100k_base",
            bpe: tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

impl TokenCounter for Tiktoken {
    fn name(&self) -> &str {
        self.name
    }
    fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }
}
