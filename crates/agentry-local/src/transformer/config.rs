//! The shape of a transformer, read from a GGUF file's metadata.

use candle_core::quantized::gguf_file::Value;
use std::collections::HashMap;

/// How rotary position embeddings pair up a head's dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RopeStyle {
    /// Dimension `i` with `i + head_dim / 2` (GGML's NEOX mode: Qwen2).
    Halves,
    /// Dimension `2i` with `2i + 1` (GGML's normal mode: Llama, Mistral, SmolLM2).
    Interleaved,
}

/// The hyperparameters of a decoder-only transformer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Config {
    /// Transformer blocks.
    pub(crate) layers: usize,
    /// The width of the residual stream.
    pub(crate) embedding: usize,
    /// The width of the feed-forward network's hidden layer.
    pub(crate) feed_forward: usize,
    /// Query heads.
    pub(crate) heads: usize,
    /// Key and value heads (fewer than query heads under grouped-query attention).
    pub(crate) kv_heads: usize,
    /// The width of one head.
    pub(crate) head_dim: usize,
    /// The epsilon of the RMS norms.
    pub(crate) norm_eps: f32,
    /// The base of the rotary embeddings' frequencies.
    pub(crate) rope_base: f32,
    /// How rotary embeddings pair dimensions.
    pub(crate) rope_style: RopeStyle,
    /// Whether query, key and value projections add a bias.
    pub(crate) qkv_bias: bool,
    /// The most positions the model was trained to attend to.
    pub(crate) context_length: usize,
}

impl Config {
    /// Reads the hyperparameters of `architecture` (`llama` or `qwen2`) from `metadata`.
    pub(crate) fn from_metadata(
        architecture: &str,
        metadata: &HashMap<String, Value>,
    ) -> Result<Config, String> {
        let (rope_style, qkv_bias) = match architecture {
            "llama" => (RopeStyle::Interleaved, false),
            "qwen2" => (RopeStyle::Halves, true),
            other => {
                return Err(format!(
                    "its architecture `{other}` is not supported (supported: llama, qwen2)"
                ));
            }
        };
        let get = |key: &str| metadata.get(&format!("{architecture}.{key}"));
        let usize_of = |key: &str| -> Result<usize, String> {
            get(key)
                .ok_or_else(|| format!("its metadata lacks `{architecture}.{key}`"))?
                .to_u32()
                .map(|v| v as usize)
                .map_err(|e| format!("its `{architecture}.{key}` is not a number ({e})"))
        };
        let f32_of = |key: &str, default: f32| -> f32 {
            get(key).and_then(|v| v.to_f32().ok()).unwrap_or(default)
        };
        let embedding = usize_of("embedding_length")?;
        let heads = usize_of("attention.head_count")?;
        let kv_heads = usize_of("attention.head_count_kv").unwrap_or(heads);
        if heads == 0 || kv_heads == 0 || embedding % heads != 0 || heads % kv_heads != 0 {
            return Err(format!(
                "its attention shape is inconsistent ({embedding} wide, {heads} heads, \
                 {kv_heads} key/value heads)"
            ));
        }
        let head_dim = embedding / heads;
        let rope_dim = usize_of("rope.dimension_count").unwrap_or(head_dim);
        if head_dim % 4 != 0 {
            return Err(format!(
                "its heads are {head_dim} wide; only multiples of 4 are supported"
            ));
        }
        if rope_dim != head_dim {
            return Err(format!(
                "its rotary embeddings cover {rope_dim} of {head_dim} head dimensions; only \
                 rotations of whole heads are supported"
            ));
        }
        Ok(Config {
            layers: usize_of("block_count")?,
            embedding,
            feed_forward: usize_of("feed_forward_length")?,
            heads,
            kv_heads,
            head_dim,
            norm_eps: f32_of("attention.layer_norm_rms_epsilon", 1e-6),
            rope_base: f32_of("rope.freq_base", 10_000.0),
            rope_style,
            qkv_bias,
            context_length: usize_of("context_length").unwrap_or(4096),
        })
    }

    /// The width of all key (or value) heads of one position.
    pub(crate) fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}
