//! Sampling settings of the local model: how the next token is chosen.

use agentry_core::ModelParams;
use candle_transformers::generation::{LogitsProcessor, Sampling as Strategy};

/// How the next token is chosen. The defaults decode greedily (the most likely token every
/// time), which makes runs repeatable and suits tool calling; a request's `temperature` and
/// `top_p` ([`ModelParams`]) override these per call, and `extra` may carry `top_k`, `seed`
/// and `repeat_penalty`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    /// Softmax temperature; 0 picks the most likely token.
    pub temperature: f64,
    /// Keep the smallest set of tokens whose probability adds up to this (nucleus sampling).
    pub top_p: Option<f64>,
    /// Keep only the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// The random seed (used when temperature is above 0).
    pub seed: u64,
    /// Divides the logits of tokens generated recently (1.0 turns it off).
    pub repeat_penalty: f32,
    /// How many recent generated tokens the penalty looks at.
    pub repeat_last_n: usize,
    /// The most tokens one turn may produce, unless the request says otherwise.
    pub max_tokens: usize,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: None,
            top_k: None,
            seed: 42,
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            max_tokens: 1024,
        }
    }
}

impl Sampling {
    /// These settings with a request's parameters applied.
    pub(crate) fn with_params(&self, params: &ModelParams) -> Sampling {
        let mut s = self.clone();
        if let Some(t) = params.temperature {
            s.temperature = f64::from(t);
        }
        if let Some(p) = params.top_p {
            s.top_p = Some(f64::from(p));
        }
        if let Some(n) = params.max_tokens {
            s.max_tokens = n as usize;
        }
        let extra = &params.extra;
        if let Some(k) = extra.get("top_k").and_then(|v| v.as_u64()) {
            s.top_k = Some(k as usize);
        }
        if let Some(seed) = extra.get("seed").and_then(|v| v.as_u64()) {
            s.seed = seed;
        }
        if let Some(p) = extra.get("repeat_penalty").and_then(|v| v.as_f64()) {
            s.repeat_penalty = p as f32;
        }
        s
    }

    /// The candle logits processor for these settings.
    pub(crate) fn processor(&self) -> LogitsProcessor {
        let temperature = self.temperature;
        let strategy = if temperature <= 0.0 {
            Strategy::ArgMax
        } else {
            match (self.top_k, self.top_p) {
                (None, None) => Strategy::All { temperature },
                (Some(k), None) => Strategy::TopK { k, temperature },
                (None, Some(p)) => Strategy::TopP { p, temperature },
                (Some(k), Some(p)) => Strategy::TopKThenTopP { k, p, temperature },
            }
        };
        LogitsProcessor::from_sampling(self.seed, strategy)
    }
}
