//! The tokenizer of a GGUF file, built from its metadata (vocabulary, merges, token types) with
//! the `tokenizers` crate, so no `tokenizer.json` is needed beside the weights.

use crate::Error;
use candle_core::quantized::gguf_file::Value;
use std::collections::HashMap;
use std::path::Path;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer};

/// The split pattern of Qwen2 tokenizers.
const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Token types of the GGUF vocabulary (llama.cpp's numbering).
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// Names of control tokens that end a turn in common chat formats.
const END_OF_TURN: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "<end_of_turn>",
];

/// A tokenizer with what generation needs to know about its special tokens.
pub(crate) struct GgufTokenizer {
    /// The tokenizer.
    pub(crate) tokenizer: Tokenizer,
    /// Tokens that end the model's turn.
    pub(crate) stop_tokens: Vec<u32>,
    /// The beginning-of-sequence token, when the model wants it in front of every prompt.
    pub(crate) bos: Option<(u32, String)>,
    /// The text of the beginning-of-sequence token (for chat templates).
    pub(crate) bos_text: String,
    /// The text of the end-of-sequence token (for chat templates).
    pub(crate) eos_text: String,
}

/// Builds the tokenizer of the GGUF file at `path` from its `metadata`.
pub(crate) fn from_metadata(
    path: &Path,
    metadata: &HashMap<String, Value>,
) -> Result<GgufTokenizer, Error> {
    let fail = |reason: String| Error::Tokenizer {
        path: path.to_owned(),
        reason,
    };
    let get = |key: &str| metadata.get(key);
    let model = get("tokenizer.ggml.model")
        .and_then(|v| v.to_string().ok())
        .map_or("", String::as_str);
    if model != "gpt2" {
        return Err(fail(format!(
            "its tokenizer model is `{model}`; only byte-level BPE (`gpt2`) is supported"
        )));
    }
    let strings = |key: &str| -> Result<Vec<String>, Error> {
        let values = get(key)
            .and_then(|v| v.to_vec().ok())
            .ok_or_else(|| fail(format!("the metadata has no `{key}`")))?;
        values
            .iter()
            .map(|v| {
                v.to_string()
                    .cloned()
                    .map_err(|e| fail(format!("`{key}`: {e}")))
            })
            .collect()
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    let merges = strings("tokenizer.ggml.merges")?;
    let types: Vec<i32> = get("tokenizer.ggml.token_type")
        .and_then(|v| v.to_vec().ok())
        .map(|v| v.iter().map(|t| t.to_i32().unwrap_or(1)).collect())
        .unwrap_or_default();

    let vocab: ahash::AHashMap<String, u32> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let merges: Vec<(String, String)> = merges
        .iter()
        .filter_map(|m| m.split_once(' ').map(|(a, b)| (a.to_owned(), b.to_owned())))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| {
            fail(format!(
                "the vocabulary and merges do not make a BPE model: {e}"
            ))
        })?;

    let mut tokenizer = Tokenizer::new(bpe);
    let pre = get("tokenizer.ggml.pre")
        .and_then(|v| v.to_string().ok())
        .map_or("default", String::as_str);
    tokenizer.with_pre_tokenizer(Some(pre_tokenizer(pre).map_err(fail)?));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

    let added: Vec<AddedToken> = tokens
        .iter()
        .zip(&types)
        .filter(|(_, t)| **t == CONTROL || **t == USER_DEFINED)
        .map(|(text, t)| AddedToken::from(text.clone(), *t == CONTROL))
        .collect();
    tokenizer.add_tokens(&added);

    let id_of = |key: &str| get(key).and_then(|v| v.to_u32().ok());
    let text_of = |id: Option<u32>| {
        id.and_then(|i| tokens.get(i as usize))
            .cloned()
            .unwrap_or_default()
    };
    let bos_id = id_of("tokenizer.ggml.bos_token_id");
    let eos_id = id_of("tokenizer.ggml.eos_token_id");
    let mut stop_tokens: Vec<u32> = [eos_id, id_of("tokenizer.ggml.eot_token_id")]
        .into_iter()
        .flatten()
        .collect();
    for name in END_OF_TURN {
        if let Some(i) = tokens.iter().position(|t| t == name) {
            stop_tokens.push(i as u32);
        }
    }
    stop_tokens.sort_unstable();
    stop_tokens.dedup();
    let add_bos = get("tokenizer.ggml.add_bos_token")
        .and_then(|v| v.to_bool().ok())
        .unwrap_or(false);
    Ok(GgufTokenizer {
        tokenizer,
        stop_tokens,
        bos: bos_id.filter(|_| add_bos).map(|i| (i, text_of(Some(i)))),
        bos_text: text_of(bos_id),
        eos_text: text_of(eos_id),
    })
}

/// The pre-tokenizer llama.cpp's `tokenizer.ggml.pre` names.
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, String> {
    let byte_level = |use_regex| ByteLevel::new(false, false, use_regex);
    Ok(match pre {
        "qwen2" | "deepseek-r1-qwen" => {
            let split = Split::new(
                SplitPattern::Regex(QWEN2_PATTERN.to_owned()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| format!("the Qwen2 split pattern does not compile: {e}"))?;
            Sequence::new(vec![split.into(), byte_level(false).into()]).into()
        }
        "smollm" | "starcoder" | "refact" => {
            Sequence::new(vec![Digits::new(true).into(), byte_level(true).into()]).into()
        }
        _ => byte_level(true).into(),
    })
}
