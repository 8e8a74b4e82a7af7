//! Background commands (`async: true`): nothing waits for them and they decide nothing; the
//! context they give reaches the model on the run's next model call.

use super::process::{self, Invocation};
use super::reply;
use super::spec::CommandSpec;
use crate::claude::{EventName, Site};
use crate::hooks::Engine;
use agentry_core::Message;
use agentry_core::hooks::BeforeModel;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Context background commands gave, by run id, waiting for the run's next model call.
#[derive(Clone, Default)]
pub(crate) struct LaterContext(Arc<Mutex<HashMap<String, Vec<String>>>>);

impl LaterContext {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<String>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `context` for the next model call of run `run_id`.
    fn push(&self, run_id: &str, context: String) {
        self.lock()
            .entry(run_id.to_string())
            .or_default()
            .push(context);
    }

    /// Takes what was kept for run `run_id`.
    fn take(&self, run_id: &str) -> Option<Vec<String>> {
        self.lock().remove(run_id)
    }

    /// Forgets what was kept for run `run_id` (it ended).
    pub(crate) fn forget(&self, run_id: &str) {
        self.lock().remove(run_id);
    }
}

impl Engine {
    /// Adds the context background commands gave since the run's last model call to the
    /// request, as one system reminder.
    pub(crate) fn add_later_context(&self, ev: &mut BeforeModel, run_id: &str) {
        if let Some(context) = self.commands.later.take(run_id) {
            ev.request.messages.push(Message::user(format!(
                "<system-reminder>\n{}\n</system-reminder>",
                context.join("\n")
            )));
        }
    }

    /// Starts an `async: true` command: nothing waits for it, and it decides nothing; the
    /// context it gives reaches the model on the run's next model call, and its system message
    /// is reported when it comes.
    pub(super) fn spawn_background(
        &self,
        spec: CommandSpec,
        event: EventName,
        site: &Site<'_>,
        stdin: Arc<[u8]>,
        env: Vec<(String, String)>,
        timeout: Duration,
    ) {
        let cwd = self.project_dir.clone();
        let limits = self.limits;
        let later = self.commands.later.clone();
        let ctx = site.ctx.cloned();
        tokio::spawn(async move {
            let inv = Invocation {
                spec: &spec,
                stdin,
                cwd: &cwd,
                env: &env,
                timeout,
                limits,
            };
            let script = spec.display();
            let verdict = match process::run(inv).await {
                Ok(done) => reply::read(event, &done).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match verdict {
                Ok(verdict) => {
                    if let (Some(message), Some(ctx)) = (&verdict.system_message, &ctx) {
                        ctx.emit(
                            "system_message",
                            json!({"hook": script, "event": event.name(), "message": message}),
                        );
                    }
                    if let (Some(context), Some(ctx)) = (verdict.context, &ctx) {
                        later.push(
                            ctx.run_id(),
                            format!("{event} hook (in the background): {context}"),
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(hook = %script, %event, error = %e, "a background command hook failed")
                }
            }
        });
    }
}
