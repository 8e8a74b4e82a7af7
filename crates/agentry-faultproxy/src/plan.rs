//! Which fault each connection (or each matching request) gets.

use crate::Fault;
use std::fmt;
use std::sync::Arc;

/// Chooses the fault for each connection the proxy accepts, by the connection's index (0 for
/// the first), or, scoped with [`on_requests_containing`](Plan::on_requests_containing), for
/// each request that contains a marker, by that request's index among the matching ones.
///
/// ```
/// use agentry_faultproxy::{Fault, Plan};
/// use std::time::Duration;
///
/// // A 429 storm: three rate limits, then every connection passes.
/// let storm = Plan::first(vec![Fault::rate_limited(Duration::from_millis(200)); 3]);
/// assert_eq!(storm.fault_for(2), Fault::rate_limited(Duration::from_millis(200)));
/// assert_eq!(storm.fault_for(3), Fault::Pass);
///
/// // One connection in five gets a 500 or a reset, the same ones for the same seed.
/// let chaos = Plan::seeded(42, 0.2, [Fault::status(500), Fault::Reset]);
/// assert_eq!(chaos.fault_for(7), Plan::seeded(42, 0.2, [Fault::status(500), Fault::Reset]).fault_for(7));
/// ```
#[derive(Clone)]
pub struct Plan {
    choose: Arc<dyn Fn(usize) -> Fault + Send + Sync>,
    marker: Option<Vec<u8>>,
}

impl Plan {
    /// Every connection passes untouched.
    pub fn pass() -> Plan {
        Plan::from_fn(|_| Fault::Pass)
    }

    /// Every connection gets `fault`.
    pub fn always(fault: Fault) -> Plan {
        Plan::from_fn(move |_| fault.clone())
    }

    /// The first connections get these faults, in order; every later one passes.
    pub fn first(faults: impl IntoIterator<Item = Fault>) -> Plan {
        let faults: Vec<Fault> = faults.into_iter().collect();
        Plan::from_fn(move |index| faults.get(index).cloned().unwrap_or(Fault::Pass))
    }

    /// The first `n` connections get `fault`; every later one passes.
    pub fn first_n(n: usize, fault: Fault) -> Plan {
        Plan::from_fn(move |index| {
            if index < n {
                fault.clone()
            } else {
                Fault::Pass
            }
        })
    }

    /// Each connection gets, with probability `rate`, one of `faults` (each as likely), else
    /// passes. The choice depends only on `seed` and the connection's index, so a failing run
    /// is reproduced with the same seed, however the connections interleave.
    ///
    /// # Panics
    /// When `faults` is empty and `rate` is above zero.
    pub fn seeded(seed: u64, rate: f64, faults: impl IntoIterator<Item = Fault>) -> Plan {
        let faults: Vec<Fault> = faults.into_iter().collect();
        assert!(
            !faults.is_empty() || rate <= 0.0,
            "a seeded plan with a fault rate needs at least one fault to choose from"
        );
        Plan::from_fn(move |index| {
            let mut rng =
                fastrand::Rng::with_seed(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if rng.f64() < rate {
                faults[rng.usize(..faults.len())].clone()
            } else {
                Fault::Pass
            }
        })
    }

    /// The fault for each index is what `choose` returns.
    pub fn from_fn(choose: impl Fn(usize) -> Fault + Send + Sync + 'static) -> Plan {
        Plan {
            choose: Arc::new(choose),
            marker: None,
        }
    }

    /// Scopes the plan to requests: connections pass through, and the proxy reads the HTTP/1.1
    /// requests on each (heads and bodies); every request that contains `marker` (in its head
    /// or its body) takes the next index of the plan, counted across connections, and gets that
    /// index's fault, applied from that request on (a fault that answers in place of the
    /// upstream answers that request and ends the connection). Requests without the marker
    /// pass. This picks out one call among many on kept-alive connections, e.g. an MCP
    /// `tools/call`.
    ///
    /// # Panics
    /// When `marker` is empty.
    pub fn on_requests_containing(mut self, marker: impl AsRef<[u8]>) -> Plan {
        assert!(
            !marker.as_ref().is_empty(),
            "the marker of a request-scoped plan must not be empty"
        );
        self.marker = Some(marker.as_ref().to_vec());
        self
    }

    /// The fault for index `index`.
    pub fn fault_for(&self, index: usize) -> Fault {
        (self.choose)(index)
    }

    /// The marker of a plan scoped to requests, if it is.
    pub fn request_marker(&self) -> Option<&[u8]> {
        self.marker.as_deref()
    }
}

impl Default for Plan {
    /// [`Plan::pass`].
    fn default() -> Self {
        Plan::pass()
    }
}

impl fmt::Debug for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field(
                "on_requests_containing",
                &self.marker.as_deref().map(String::from_utf8_lossy),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_plan_injects_about_its_rate_and_only_its_faults() {
        let plan = Plan::seeded(7, 0.3, [Fault::status(500), Fault::Reset]);
        let faults: Vec<Fault> = (0..1000).map(|i| plan.fault_for(i)).collect();
        let injected = faults.iter().filter(|f| !f.is_pass()).count();
        assert!((200..400).contains(&injected), "{injected} of 1000");
        assert!(faults.contains(&Fault::Reset) && faults.contains(&Fault::status(500)));
        let other = Plan::seeded(8, 0.3, [Fault::status(500), Fault::Reset]);
        assert_ne!(
            faults,
            (0..1000).map(|i| other.fault_for(i)).collect::<Vec<_>>()
        );
        assert!((0..100).all(|i| Plan::seeded(1, 0.0, []).fault_for(i).is_pass()));
    }
}
