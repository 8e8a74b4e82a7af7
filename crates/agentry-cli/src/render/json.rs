//! `--json`: one JSON object per line for each event, then the result.

use super::Render;
use crate::cost::Cost;
use agentry::{RunEvent, RunOutput};
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;

/// Renders a run as NDJSON: `{"type": kind, "agent_path": ..., ...}` per event, and a last
/// `{"type": "result", ...}` (or `{"type": "error", ...}`) line.
pub struct Ndjson {
    out: Box<dyn Write + Send>,
}

impl Ndjson {
    /// A renderer writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Ndjson { out }
    }

    fn emit(&mut self, value: Value) {
        let _ = writeln!(self.out, "{value}");
        let _ = self.out.flush();
    }
}

/// An event as one JSON object.
pub fn event_json(event: &RunEvent) -> Value {
    let mut object = match event {
        RunEvent::TextDelta { text, .. } | RunEvent::ThinkingDelta { text, .. } => {
            json!({ "text": text })
        }
        other => other
            .to_recorded()
            .map(|r| r.data)
            .unwrap_or_else(|| json!({})),
    };
    if let Value::Object(map) = &mut object {
        map.insert("type".into(), event.kind().into());
        map.insert("agent_path".into(), event.agent_path().into());
    }
    object
}

impl Render for Ndjson {
    fn event(&mut self, event: &RunEvent) {
        self.emit(event_json(event));
    }

    fn finished(&mut self, out: &RunOutput<(), Value>, elapsed: Duration, cost: Option<Cost>) {
        self.emit(json!({
            "type": "result",
            "run_id": out.run_id,
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
