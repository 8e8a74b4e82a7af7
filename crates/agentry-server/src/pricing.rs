//! What runs and steps cost: each agent's [`Price`] (`ServerBuilder::price`), applied to a run's
//! usage (`cost_usd` on a run and a listed run) and to each step's (`cost_usd` on the run API
//! stream's `step_finished` events, a sub-agent's steps at its own agent's price).

use agentry::{Price, RunEvent};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Each agent's price, by agent name.
pub(crate) type Prices = Arc<BTreeMap<String, Price>>;

/// What the step an event ends cost, when it is a `step_finished` that used tokens and its
/// agent (the last part of its path) has a price.
pub(crate) fn step_cost(prices: &Prices, event: &RunEvent) -> Option<f64> {
    let RunEvent::StepFinished {
        usage, agent_path, ..
    } = event
    else {
        return None;
    };
    if usage.is_zero() {
        return None;
    }
    let agent = agent_path.rsplit('/').next().unwrap_or_default();
    prices.get(agent).map(|p| p.cost(usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentry::Usage;

    #[test]
    fn a_step_is_priced_at_its_own_agent_s_price() {
        let prices: Prices = Arc::new(BTreeMap::from([
            ("team".to_owned(), Price::per_million(1.0, 2.0)),
            ("researcher".to_owned(), Price::per_million(10.0, 20.0)),
        ]));
        let step = |path: &str, usage: Usage| RunEvent::StepFinished {
            step: 1,
            usage,
            agent_path: path.into(),
            run_id: None,
        };
        let usage = Usage::new(1_000_000, 1_000_000);
        assert_eq!(step_cost(&prices, &step("team", usage)), Some(3.0));
        assert_eq!(
            step_cost(&prices, &step("team/researcher", usage)),
            Some(30.0)
        );
        assert_eq!(step_cost(&prices, &step("other", usage)), None);
        assert_eq!(step_cost(&prices, &step("team", Usage::default())), None);
    }
}
