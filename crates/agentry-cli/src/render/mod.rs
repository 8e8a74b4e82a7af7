//! How a run is shown: live in a terminal ([`Live`]) or as NDJSON events ([`Ndjson`]).

mod diff;
mod json;
mod live;
mod markdown;
mod masked;
mod short;

pub(crate) use diff::file_change;
pub(crate) use json::Ndjson;
pub(crate) use live::Live;
pub(crate) use masked::Masked;
pub(crate) use short::{cut_line, short_content, short_input, short_result};

use crate::cost::Cost;
use agentry::{RunEvent, RunOutput};
use serde_json::Value;
use std::time::Duration;

/// Something that shows a run's events and its end.
pub(crate) trait Render {
    /// Shows one event.
    fn event(&mut self, event: &RunEvent);
    /// Shows how the run ended.
    fn finished(&mut self, out: &RunOutput<(), Value>, elapsed: Duration, cost: Option<Cost>);
    /// Shows that the run failed.
    fn failed(&mut self, run_id: &str, error: &str);
    /// The model is being waited on (a spinner may show); `false` when output arrives.
    fn waiting(&mut self, _waiting: bool) {}
}
