//! What a run cost: token usage priced by the `[prices]` table of `agentry.toml`; a local or
//! scripted model costs nothing.

use crate::config::PriceConfig;
use agentry::Usage;
use std::collections::BTreeMap;

pub(crate) use agentry::Price;

/// The price of the model `spec` names: local specs cost nothing, hosted ones what `prices`
/// says (`None` when it says nothing).
pub(crate) fn price_of(spec: &str, prices: &BTreeMap<String, PriceConfig>) -> Option<Price> {
    let spec = spec.trim();
    if spec == "local" || spec.starts_with("local:") || spec.starts_with("scripted:") {
        return Some(Price::Local);
    }
    prices.get(spec).map(|p| {
        let mut price = Price::per_million(p.input, p.output);
        if let Some(usd) = p.cached_input {
            price = price.cached_input(usd);
        }
        if let Some(usd) = p.cache_write_input {
            price = price.cache_write_input(usd);
        }
        price
    })
}

/// A run's cost as the summary shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cost {
    /// US dollars.
    pub usd: f64,
    /// True when the model ran here.
    pub local: bool,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.local, self.usd) {
            (true, _) => f.write_str("$0 (local)"),
            (false, usd) if usd < 0.01 => write!(f, "${usd:.4}"),
            (false, usd) => write!(f, "${usd:.2}"),
        }
    }
}

/// The cost of `usage` at `price`.
pub(crate) fn of(price: Option<Price>, usage: &Usage) -> Option<Cost> {
    price.map(|p| Cost {
        usd: p.cost(usage),
        local: p.is_local(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priced() -> BTreeMap<String, PriceConfig> {
        BTreeMap::from([(
            "anthropic:claude-sonnet-4-5".to_owned(),
            PriceConfig {
                input: 3.0,
                output: 15.0,
                cached_input: Some(0.3),
                cache_write_input: Some(3.75),
            },
        )])
    }

    #[test]
    fn hosted_models_are_priced_as_the_table_says_cache_prices_defaulting_to_input() {
        let price = price_of("anthropic:claude-sonnet-4-5", &priced()).unwrap();
        let expected = Price::per_million(3.0, 15.0)
            .cached_input(0.3)
            .cache_write_input(3.75);
        assert_eq!(price, expected);
        let plain = BTreeMap::from([(
            "openai:gpt-4.1".to_owned(),
            PriceConfig {
                input: 2.0,
                output: 8.0,
                cached_input: None,
                cache_write_input: None,
            },
        )]);
        assert_eq!(
            price_of("openai:gpt-4.1", &plain),
            Some(Price::per_million(2.0, 8.0))
        );
    }

    #[test]
    fn local_models_are_free_and_unpriced_hosted_ones_unknown() {
        assert_eq!(price_of("local", &priced()), Some(Price::Local));
        assert_eq!(
            price_of("local:qwen2.5-coder-1.5b", &priced()),
            Some(Price::Local)
        );
        assert_eq!(
            price_of("scripted:turns.json", &priced()),
            Some(Price::Local)
        );
        assert_eq!(price_of("openai:gpt-4.1", &priced()), None);
    }

    #[test]
    fn costs_read_as_dollars() {
        let c = |usd| Cost { usd, local: false };
        assert_eq!(c(0.000_42).to_string(), "$0.0004");
        assert_eq!(c(1.234).to_string(), "$1.23");
        assert_eq!(
            Cost {
                usd: 0.0,
                local: true
            }
            .to_string(),
            "$0 (local)"
        );
    }
}
