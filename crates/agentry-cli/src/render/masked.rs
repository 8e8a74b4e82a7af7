//! [`Masked`]: a renderer that masks the run's end with the project's redactor. A run's events
//! come masked from the runtime; its output and error are the caller's own, unmasked, so the
//! command masks them before it prints them.

use super::Render;
use crate::cost::Cost;
use agentry::{RunEvent, RunOutput};
use agentry_core::Redact;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// `inner`, with the output and error of a run masked by `redactor`.
pub(crate) struct Masked {
    inner: Box<dyn Render>,
    redactor: Arc<dyn Redact>,
}

impl Masked {
    /// Masks what `inner` shows of a run's end.
    pub(crate) fn new(inner: Box<dyn Render>, redactor: Arc<dyn Redact>) -> Masked {
        Masked { inner, redactor }
    }
}

impl Render for Masked {
    fn event(&mut self, event: &RunEvent) {
        self.inner.event(event);
    }

    fn finished(&mut self, out: &RunOutput<(), Value>, elapsed: Duration, cost: Option<Cost>) {
        let mut masked = out.clone();
        if let Some(output) = &mut masked.output {
            agentry_core::redact::redact_value(self.redactor.as_ref(), output);
        }
        self.inner.finished(&masked, elapsed, cost);
    }

    fn failed(&mut self, run_id: &str, error: &str) {
        self.inner.failed(run_id, &self.redactor.redact(error));
    }

    fn waiting(&mut self, waiting: bool) {
        self.inner.waiting(waiting);
    }
}
