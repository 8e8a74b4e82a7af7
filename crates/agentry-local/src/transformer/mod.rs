//! A decoder-only transformer (Llama and Qwen2 architectures) run on the CPU straight from a
//! GGUF file's quantized weights.
//!
//! Written for generation one token at a time: the weights stay in their file format (the
//! token embedding too: a row is expanded when a token is looked up), the keys and values of
//! each layer go into a cache reserved once and written in place, grouped-query heads read
//! their key/value head where it is, and each matrix product (query, key and value together;
//! gate and up together) is one parallel section on a pool of the machine's cores.

mod attention;
#[cfg(target_arch = "x86_64")]
mod attention_x86;
mod config;
#[cfg(target_arch = "x86_64")]
mod kernel_avx2;
#[cfg(all(test, target_arch = "x86_64"))]
mod kernel_check;
#[cfg(target_arch = "x86_64")]
mod kernel_drivers;
#[cfg(target_arch = "x86_64")]
mod kernel_x86;
mod matmul;
mod ops;
#[cfg(target_arch = "x86_64")]
mod packed_x86;
#[cfg(target_arch = "x86_64")]
mod quantize_x86;
mod tensor;

use crate::CachePrecision;
use attention::KvCache;
use candle_core::quantized::gguf_file::Content;
use config::Config;
use matmul::{Input, Product, Workspace, multiply};
use ops::Rotary;
use std::io::{Read, Seek};
use tensor::{Matrix, TensorReader};

/// The weights of one transformer block.
struct Layer {
    attn_norm: Vec<f32>,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    q_bias: Option<Vec<f32>>,
    k_bias: Option<Vec<f32>>,
    v_bias: Option<Vec<f32>>,
    output: Matrix,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
}

/// Buffers of one forward pass, kept from pass to pass (sized for the most tokens seen).
#[derive(Default)]
struct Buffers {
    x: Vec<f32>,
    normed: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    attended: Vec<f32>,
    projected: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    logits: Vec<f32>,
    input: Input,
    work: Workspace,
}

/// A transformer with its key/value cache.
pub(crate) struct Transformer {
    weights: Weights,
    state: State,
    pool: rayon::ThreadPool,
}

/// What the file holds: the shape and the weights.
struct Weights {
    config: Config,
    embedding: Matrix,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    /// The output projection (the embedding when the file ties them).
    output: Option<Matrix>,
    vocabulary: usize,
}

/// What a forward pass writes: the rotations of its positions, the cache and the buffers.
struct State {
    rotary: Rotary,
    cache: KvCache,
    buffers: Buffers,
}

impl Transformer {
    /// Reads the transformer of `architecture` from a GGUF file, with a key/value cache of at
    /// most `context` positions (the model's own limit when `None`) stored as its precision
    /// says, computing on `threads` threads.
    pub(crate) fn read<R: Read + Seek>(
        architecture: &str,
        content: &Content,
        reader: &mut R,
        context: Option<usize>,
        precision: CachePrecision,
        threads: usize,
    ) -> Result<Transformer, String> {
        let config = Config::from_metadata(architecture, &content.metadata)?;
        let mut tensors = TensorReader::new(content, reader);
        let (e, f, kv) = (config.embedding, config.feed_forward, config.kv_width());
        let vocabulary = content
            .tensor_infos
            .get("token_embd.weight")
            .map(|info| info.shape.dims()[0])
            .ok_or("it has no tensor `token_embd.weight`")?;
        let embedding = tensors.matrix("token_embd.weight", vocabulary, e)?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let name = |part: &str| format!("blk.{i}.{part}");
            let mut bias = |part: &str, len: usize| -> Result<Option<Vec<f32>>, String> {
                if config.qkv_bias {
                    tensors.vector(&name(part), len).map(Some)
                } else {
                    Ok(None)
                }
            };
            let q_bias = bias("attn_q.bias", e)?;
            let k_bias = bias("attn_k.bias", kv)?;
            let v_bias = bias("attn_v.bias", kv)?;
            layers.push(Layer {
                attn_norm: tensors.vector(&name("attn_norm.weight"), e)?,
                q: tensors.matrix(&name("attn_q.weight"), e, e)?,
                k: tensors.matrix(&name("attn_k.weight"), kv, e)?,
                v: tensors.matrix(&name("attn_v.weight"), kv, e)?,
                q_bias,
                k_bias,
                v_bias,
                output: tensors.matrix(&name("attn_output.weight"), e, e)?,
                ffn_norm: tensors.vector(&name("ffn_norm.weight"), e)?,
                gate: tensors.matrix(&name("ffn_gate.weight"), f, e)?,
                up: tensors.matrix(&name("ffn_up.weight"), f, e)?,
                down: tensors.matrix(&name("ffn_down.weight"), e, f)?,
            });
        }
        let output_norm = tensors.vector("output_norm.weight", e)?;
        let output = if tensors.has("output.weight") {
            Some(tensors.matrix("output.weight", vocabulary, e)?)
        } else {
            None
        };
        let capacity = context.map_or(config.context_length, |c| c.min(config.context_length));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("agentry-local-{i}"))
            .build()
            .map_err(|e| format!("its compute threads cannot start ({e})"))?;
        Ok(Transformer {
            state: State {
                rotary: Rotary::new(config.rope_style, config.head_dim, config.rope_base),
                cache: KvCache::new(
                    config.layers,
                    config.kv_heads,
                    config.head_dim,
                    capacity,
                    precision,
                ),
                buffers: Buffers::default(),
            },
            weights: Weights {
                config,
                embedding,
                layers,
                output_norm,
                output,
                vocabulary,
            },
            pool,
        })
    }

    /// The most positions the key/value cache holds.
    pub(crate) fn context_length(&self) -> usize {
        self.state.cache.capacity()
    }

    /// Runs `tokens` at positions `start ..` (the cache must hold positions `0 .. start`) and
    /// returns the logits of the last one.
    pub(crate) fn forward(&mut self, tokens: &[u32], start: usize) -> Result<&[f32], String> {
        if tokens.is_empty() {
            return Err("no tokens to run".into());
        }
        let capacity = self.state.cache.capacity();
        if start + tokens.len() > capacity {
            return Err(format!(
                "{} positions do not fit the context of {capacity}",
                start + tokens.len(),
            ));
        }
        let vocabulary = self.weights.vocabulary;
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocabulary) {
            return Err(format!(
                "token {bad} is outside the vocabulary of {vocabulary}"
            ));
        }
        let (weights, state) = (&self.weights, &mut self.state);
        self.pool.install(|| state.run(weights, tokens, start));
        Ok(&self.state.buffers.logits)
    }
}

impl State {
    fn run(&mut self, w: &Weights, tokens: &[u32], start: usize) {
        let c = &w.config;
        let (m, e, f, kv) = (tokens.len(), c.embedding, c.feed_forward, c.kv_width());
        let b = &mut self.buffers;
        b.x.resize(m * e, 0.0);
        b.normed.resize(m * e, 0.0);
        b.q.resize(m * e, 0.0);
        b.k.resize(m * kv, 0.0);
        b.v.resize(m * kv, 0.0);
        b.attended.resize(m * e, 0.0);
        b.projected.resize(m * e, 0.0);
        b.gate.resize(m * f, 0.0);
        b.up.resize(m * f, 0.0);
        for (row, &token) in b.x.chunks_exact_mut(e).zip(tokens) {
            w.embedding.row_into(token as usize, row);
        }
        self.rotary.positions(start, m);
        for (index, layer) in w.layers.iter().enumerate() {
            ops::rms_norm(&b.x, &layer.attn_norm, c.norm_eps, &mut b.normed);
            b.input.set(&b.normed, m, e);
            multiply(
                &mut b.input,
                &mut [
                    Product {
                        matrix: &layer.q,
                        out: &mut b.q,
                    },
                    Product {
                        matrix: &layer.k,
                        out: &mut b.k,
                    },
                    Product {
                        matrix: &layer.v,
                        out: &mut b.v,
                    },
                ],
                &mut b.work,
            );
            for (x, bias) in [
                (&mut b.q, &layer.q_bias),
                (&mut b.k, &layer.k_bias),
                (&mut b.v, &layer.v_bias),
            ] {
                if let Some(bias) = bias {
                    ops::add_bias(x, bias);
                }
            }
            self.rotary.apply(&mut b.q, c.heads);
            self.rotary.apply(&mut b.k, c.kv_heads);
            self.cache.write(index, start, &b.k, &b.v);
            self.cache
                .attend(index, start, &b.q, c.heads, &mut b.attended);
            b.input.set(&b.attended, m, e);
            multiply(
                &mut b.input,
                &mut [Product {
                    matrix: &layer.output,
                    out: &mut b.projected,
                }],
                &mut b.work,
            );
            ops::add(&mut b.x, &b.projected);

            ops::rms_norm(&b.x, &layer.ffn_norm, c.norm_eps, &mut b.normed);
            b.input.set(&b.normed, m, e);
            multiply(
                &mut b.input,
                &mut [
                    Product {
                        matrix: &layer.gate,
                        out: &mut b.gate,
                    },
                    Product {
                        matrix: &layer.up,
                        out: &mut b.up,
                    },
                ],
                &mut b.work,
            );
            ops::silu_gate(&mut b.gate, &b.up);
            b.input.set(&b.gate, m, f);
            multiply(
                &mut b.input,
                &mut [Product {
                    matrix: &layer.down,
                    out: &mut b.projected,
                }],
                &mut b.work,
            );
            ops::add(&mut b.x, &b.projected);
        }
        let last = &b.x[(m - 1) * e..];
        ops::rms_norm(last, &w.output_norm, c.norm_eps, &mut b.normed[..e]);
        b.input.set(&b.normed[..e], 1, e);
        b.logits.resize(w.vocabulary, 0.0);
        let output = w.output.as_ref().unwrap_or(&w.embedding);
        multiply(
            &mut b.input,
            &mut [Product {
                matrix: output,
                out: &mut b.logits,
            }],
            &mut b.work,
        );
    }
}
