//! `--json`: one JSON object per line for each event, then the result.

use super::Render;
use crate::cost::Cost;
use agentry::{RunEvent, RunOutput};
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;

/// Renders a run as NDJSON: each event in its JSON form (`{"type": kind, ...}`, see
/// [`RunEvent`]), and a last `{"type": "result", ...}` (or `{"type": "error", ...}`) line.
pub(crate) struct Ndjson {
    out: Box<dyn Write + Send>,
}

impl Ndjson {
    /// A renderer writing to `out`.
    pub(crate) fn new(out: Box<dyn Write + Send>) -> Self {
        Ndjson { out }
    }

    fn emit(&mut self, value: Value) {
        let _ = writeln!(self.out, "{value}");
        let _ = self.out.flush();
    }
}

impl Render for Ndjson {
    fn event(&mut self, event: &RunEvent) {
        // The event's own JSON form: `type`, then its fields; media by reference (`sha256`,
        // `size`), as the store records them, never megabytes of base64 on a line.
        let referenced = event.with_media_references();
        let _ = serde_json::to_writer(&mut self.out, referenced.as_ref().unwrap_or(event));
        let _ = writeln!(self.out);
        let _ = self.out.flush();
    }

    fn finished(&mut self, out: &RunOutput<(), Value>, elapsed: Duration, cost: Option<Cost>) {
        self.emit(json!({
            "type": "result",
            "run_id": out.run_id,
            "session_id": out.session_id,
            "output": out.output,
            "stop": out.stop,
            "steps": out.steps,
            "usage": out.usage,
            "cost_usd": cost.map(|c| c.usd),
            "elapsed_ms": elapsed.as_millis() as u64,
        }));
    }

    fn failed(&mut self, run_id: &str, error: &str) {
        self.emit(json!({ "type": "error", "run_id": run_id, "error": error }));
    }
}
