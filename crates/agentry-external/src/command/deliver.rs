//! Handing one event to one handler, whatever carries it: a command, a persistent process or a
//! webhook.

use super::fire::Matched;
use super::process::{self, Finished, Invocation};
use crate::claude::EventName;
use crate::handler::HandlerSpec;
use crate::hooks::Engine;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Engine {
    /// [`deliver`](Self::deliver), with the handler and when it started.
    pub(super) async fn timed<'s>(
        &self,
        event: EventName,
        matched: Matched<'s>,
        stdin: Arc<[u8]>,
        env: &[(String, String)],
        timeout: Duration,
    ) -> (Matched<'s>, Instant, Result<Finished, String>) {
        let started = Instant::now();
        // A plugin's command gets its directories; others the environment as it is.
        let plugin_env = matched.plugin.map(|p| p.with_vars(env));
        let env = plugin_env.as_deref().unwrap_or(env);
        let outcome = self.deliver(event, matched.spec, stdin, env, timeout).await;
        (matched, started, outcome)
    }

    /// Hands the payload to one handler and waits for what it says.
    async fn deliver(
        &self,
        event: EventName,
        spec: &HandlerSpec,
        stdin: Arc<[u8]>,
        env: &[(String, String)],
        timeout: Duration,
    ) -> Result<Finished, String> {
        match spec {
            // Each transport's future is boxed: held inline, the largest (a command's, with its
            // read buffers) would make every delivery's future that large, and it is moved
            // several times per event.
            HandlerSpec::Command(c) => Box::pin(process::run(Invocation {
                spec: c,
                stdin,
                cwd: &self.project_dir,
                env,
                timeout,
                limits: self.limits,
            }))
            .await
            .map_err(|e| e.to_string()),
            HandlerSpec::Persistent(p) => {
                // A process that outlives runs gets what holds for all of them; what is one
                // run's or one event's (its session, its run id) comes with each event.
                let lasting = || self.lasting_env();
                let process = self.commands.persistent(p);
                Box::pin(process.request(
                    &stdin,
                    &self.project_dir,
                    &lasting,
                    timeout,
                    self.limits.stdout,
                ))
                .await
            }
            HandlerSpec::Http(w) => {
                let client = self.webhooks.get()?;
                Box::pin(crate::webhook::deliver(
                    client,
                    w,
                    event,
                    &stdin,
                    timeout,
                    self.limits.stdout,
                ))
                .await
            }
        }
    }
}
