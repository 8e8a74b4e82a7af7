//! [`Price`]: what a model's token usage costs.

use crate::Usage;
use serde::{Deserialize, Serialize};

/// How a model is priced: free when it runs here, else US dollars per million tokens, with
/// tokens served from or written to the provider's prompt cache priced apart.
///
/// ```
/// use agentry_core::{Price, Usage};
///
/// let sonnet = Price::per_million(3.0, 15.0).cached_input(0.3);
/// let usage = Usage { cached_input_tokens: 500_000, ..Usage::new(1_000_000, 100_000) };
/// // 500k plain at $3, 500k cached at $0.30, 100k out at $15.
/// assert!((sonnet.cost(&usage) - (1.5 + 0.15 + 1.5)).abs() < 1e-9);
/// assert_eq!(Price::Local.cost(&usage), 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Price {
    /// The model runs here (a local model, scripted turns): no charge.
    Local,
    /// US dollars per million tokens.
    PerMillion {
        /// Prompt tokens not served from a cache.
        input: f64,
        /// Completion tokens.
        output: f64,
        /// Prompt tokens served from the provider's cache.
        cached_input: f64,
        /// Prompt tokens written to the provider's cache.
        cache_write_input: f64,
    },
}

impl Price {
    /// `input` and `output` US dollars per million tokens; cached prompt tokens, read or
    /// written, cost what `input` does until set apart.
    pub fn per_million(input: f64, output: f64) -> Price {
        Price::PerMillion {
            input,
            output,
            cached_input: input,
            cache_write_input: input,
        }
    }

    /// The price with prompt tokens served from the provider's cache at `usd` per million.
    pub fn cached_input(mut self, usd: f64) -> Price {
        if let Price::PerMillion { cached_input, .. } = &mut self {
            *cached_input = usd;
        }
        self
    }

    /// The price with prompt tokens written to the provider's cache at `usd` per million.
    pub fn cache_write_input(mut self, usd: f64) -> Price {
        if let Price::PerMillion {
            cache_write_input, ..
        } = &mut self
        {
            *cache_write_input = usd;
        }
        self
    }

    /// True for a model that runs here.
    pub fn is_local(&self) -> bool {
        matches!(self, Price::Local)
    }

    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        match *self {
            Price::Local => 0.0,
            Price::PerMillion {
                input,
                output,
                cached_input,
                cache_write_input,
            } => {
                let cached = usage.cached_input_tokens.min(usage.input_tokens);
                let written = usage
                    .cache_write_input_tokens
                    .min(usage.input_tokens - cached);
                let plain = usage.input_tokens - cached - written;
                (plain as f64 * input
                    + cached as f64 * cached_input
                    + written as f64 * cache_write_input
                    + usage.output_tokens as f64 * output)
                    / 1_000_000.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_are_priced_apart_and_never_counted_twice() {
        let price = Price::per_million(3.0, 15.0)
            .cached_input(0.3)
            .cache_write_input(3.75);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 500_000,
            cache_write_input_tokens: 100_000,
            reasoning_tokens: 0,
        };
        // 400k plain at $3, 500k cached at $0.30, 100k written at $3.75, 100k out at $15.
        let expected = 1.2 + 0.15 + 0.375 + 1.5;
        assert!((price.cost(&usage) - expected).abs() < 1e-9);
        // Cache counts past the prompt's are not charged again.
        let odd = Usage {
            cached_input_tokens: 2_000_000,
            cache_write_input_tokens: 2_000_000,
            ..Usage::new(1_000_000, 0)
        };
        assert!((price.cost(&odd) - 0.3).abs() < 1e-9);
        assert!(Price::Local.is_local() && !price.is_local());
    }
}
