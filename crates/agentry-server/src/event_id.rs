//! The ids of a run's streamed events, as `Last-Event-ID` brings them back.
//!
//! An event the run's history records (its own, or one of its sub-agents') has its number there
//! (`7`); an event it does not record (a piece of streamed text or reasoning, a model's progress)
//! is numbered after the last recorded one (`7.3`: the third since event 7). A
//! client that reconnects with either id gets what came after it: recorded events from the
//! store, the others only from the process that streams the run while it still holds them (the
//! complete turn's `message` event holds the text whole).

use std::fmt;
use std::str::FromStr;

/// Where an event stands in its run's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct EventId {
    /// The number of the last recorded event at or before it (0: none yet).
    pub(crate) seq: u64,
    /// 0 for a recorded event; else its place among the unrecorded events since `seq`.
    pub(crate) sub: u32,
}

impl EventId {
    /// The recorded event numbered `seq`.
    pub(crate) fn recorded(seq: u64) -> Self {
        EventId { seq, sub: 0 }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sub == 0 {
            write!(f, "{}", self.seq)
        } else {
            write!(f, "{}.{}", self.seq, self.sub)
        }
    }
}

impl FromStr for EventId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not an event id of this stream (ids are `N` or `N.M`, as its events \
                 carry them)"
            )
        };
        let (seq, sub) = match s.trim().split_once('.') {
            Some((seq, sub)) => (seq, sub.parse().map_err(|_| bad())?),
            None => (s.trim(), 0),
        };
        Ok(EventId {
            seq: seq.parse().map_err(|_| bad())?,
            sub,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_parse_back_and_order_by_place() {
        for id in ["0", "7", "7.3", "12.1"] {
            assert_eq!(id.parse::<EventId>().unwrap().to_string(), id);
        }
        let ids: Vec<EventId> = ["3", "3.1", "3.2", "4", "4.1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for bad in ["", "x", "1.", "1.x", "-1", "1.2.3"] {
            assert!(bad.parse::<EventId>().is_err(), "{bad}");
        }
    }
}
