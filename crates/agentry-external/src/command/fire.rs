//! Firing one event at the handlers that match it: every matching handler runs at once
//! (identical ones once), and their answers merge, most restrictive first, into one decision.

use super::merged::Merged;
use super::reply;
use crate::claude::{EventName, Site, common_fields};
use crate::handler::HandlerSpec;
use crate::hooks::Engine;
use agentry_core::StopReason;
use agentry_core::hooks::BoxError;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A command that failed or broke the protocol.
struct Failure<'s> {
    handler: Matched<'s>,
    duration: Duration,
    message: String,
    /// A field the event does not allow (strict mode fails on these), not a failure to run.
    violation: bool,
}

/// A handler that matched an event, with where it was declared.
#[derive(Clone, Copy)]
pub(super) struct Matched<'s> {
    pub(super) spec: &'s HandlerSpec,
    source: Option<&'s str>,
    /// The plugin that declared it, whose variables its command gets.
    pub(super) plugin: Option<&'s crate::claude::Plugin>,
}

impl Matched<'_> {
    /// The handler as errors and events name it: its command (or URL), and the file that
    /// declared it when it came from one.
    fn label(&self) -> String {
        match self.source {
            Some(source) => format!("{} ({source})", self.spec.display()),
            None => self.spec.display(),
        }
    }

    /// What went wrong with it on `event`, as errors say it: "command hook `./guard.sh` on
    /// PreToolUse (from .claude/settings.json): exited with status 1".
    fn failed(&self, event: EventName, message: &str) -> String {
        let from = self
            .source
            .map(|s| format!(" (from {s})"))
            .unwrap_or_default();
        format!(
            "{} `{}` on {event}{from}: {message}",
            self.spec.noun(),
            self.spec.display()
        )
    }
}

impl Engine {
    /// The commands registered for `event` whose matcher applies to `target`, each once (an
    /// identical handler declared in two files runs once, named by the first).
    fn matching(&self, event: EventName, target: Option<&str>) -> Vec<Matched<'_>> {
        let mut found: Vec<Matched<'_>> = Vec::new();
        for g in self.settings.groups.iter().filter(|g| g.event == event) {
            let applies = match target {
                Some(t) if event.has_matcher() => g.matcher.matches(t),
                _ => true,
            };
            if applies {
                for spec in &g.hooks {
                    if !found.iter().any(|m| m.spec == spec) {
                        found.push(Matched {
                            spec,
                            source: g.source.as_deref(),
                            plugin: g.plugin.as_deref(),
                        });
                    }
                }
            }
        }
        found
    }

    /// Runs the commands of `event` that match `target` with the payload `fields` adds to the
    /// common fields, and merges what they said. With no matching command, builds nothing.
    ///
    /// A command that fails (non-zero status other than 2, a signal, a timeout, output that is
    /// not the protocol) fails open: it is reported as HookFailed naming it and the event, and
    /// takes no decision. Configured fail-closed, the event fails with that error once every
    /// sibling finished. A field the event does not allow is reported the same way and ignored
    /// (or fails the event in strict mode). `continue: false` stops the run.
    pub(crate) async fn fire(
        &self,
        event: EventName,
        target: Option<&str>,
        site: &Site<'_>,
        fields: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<Merged, BoxError> {
        // A sample's value of the field the matcher is tested against stands for the event's.
        let target = match (site.sample, matcher_field(event)) {
            (Some(sample), Some(field)) => sample.get(field).and_then(Value::as_str).or(target),
            _ => target,
        };
        let specs = self.matching(event, target);
        if specs.is_empty() {
            return Ok(Merged::default());
        }
        let mut payload = common_fields(event, site, &self.project_dir);
        fields(&mut payload);
        if let Some(sample) = site.sample {
            for (key, value) in sample {
                payload.insert(key.clone(), value.clone());
            }
        }
        // `if` rules apply to tool calls only: on other events a handler with one never runs.
        let specs: Vec<Matched<'_>> = match payload.get("tool_name").and_then(Value::as_str) {
            Some(tool) => {
                let input = payload.get("tool_input").unwrap_or(&Value::Null);
                specs
                    .into_iter()
                    .filter(|s| {
                        s.spec
                            .condition()
                            .is_none_or(|rule| crate::condition::applies(rule, tool, input))
                    })
                    .collect()
            }
            None => specs
                .into_iter()
                .filter(|s| s.spec.condition().is_none())
                .collect(),
        };
        if specs.is_empty() {
            return Ok(Merged::default());
        }
        let mut payload = Value::Object(payload);
        if !self.see_secrets
            && let Some(ctx) = site.ctx
        {
            payload = ctx.redact_value(payload);
        }
        if !self.inline_media {
            crate::media::externalize(&mut payload, &self.claude.state_dir.join("media"));
        }
        let mut bytes = serde_json::to_vec(&payload).expect("a payload serializes");
        bytes.push(b'\n');
        let stdin: Arc<[u8]> = bytes.into();
        // Commands get the environment; nothing else needs one built per event.
        let env = if specs
            .iter()
            .any(|s| matches!(s.spec, HandlerSpec::Command(_)))
        {
            self.env(event, site)
        } else {
            Vec::new()
        };
        let default_timeout = event.default_timeout();
        let mut deliver = Vec::with_capacity(specs.len());
        for matched in specs {
            let timeout = matched.spec.timeout().unwrap_or(default_timeout);
            match matched.spec {
                HandlerSpec::Command(c) if c.background => {
                    let env = match matched.plugin {
                        Some(plugin) => plugin.with_vars(&env),
                        None => env.clone(),
                    };
                    self.spawn_background(c.clone(), event, site, stdin.clone(), env, timeout);
                }
                _ => deliver.push((matched, timeout)),
            }
        }
        // In the order they finish: the last `updatedInput` to arrive wins. One handler (the
        // common case) is awaited as it is, with no set of futures to hold it.
        let finished: Vec<_> = match deliver.as_slice() {
            [] => Vec::new(),
            [(matched, timeout)] => {
                vec![
                    self.timed(event, *matched, stdin.clone(), &env, *timeout)
                        .await,
                ]
            }
            all => {
                all.iter()
                    .map(|(matched, timeout)| {
                        self.timed(event, *matched, stdin.clone(), &env, *timeout)
                    })
                    .collect::<FuturesUnordered<_>>()
                    .collect()
                    .await
            }
        };
        let mut merged = Merged::default();
        let mut failures = Vec::new();
        let mut stop: Option<(String, String)> = None;
        for (matched, started, outcome) in finished {
            let script = matched.label();
            let done = match outcome {
                Ok(done) => done,
                Err(e) => {
                    failures.push(Failure {
                        handler: matched,
                        duration: started.elapsed(),
                        message: e,
                        violation: false,
                    });
                    continue;
                }
            };
            match reply::read(event, &done) {
                Ok(verdict) => {
                    for v in &verdict.violations {
                        failures.push(Failure {
                            handler: matched,
                            duration: done.duration,
                            message: v.clone(),
                            violation: true,
                        });
                    }
                    if let Some(message) = &verdict.system_message {
                        self.system_message(site, &script, event, message);
                    }
                    if let Some(reason) = &verdict.stop
                        && stop.is_none()
                    {
                        stop = Some((script.clone(), reason.clone()));
                    }
                    merged.take(verdict);
                }
                Err(e) => failures.push(Failure {
                    handler: matched,
                    duration: done.duration,
                    message: e.to_string(),
                    violation: false,
                }),
            }
        }
        let mut fatal = None;
        for f in failures {
            let message = f.handler.failed(event, &f.message);
            let closed = f.handler.spec.fails_closed();
            if ((self.fail_closed || closed) && !f.violation) || (self.strict && f.violation) {
                fatal.get_or_insert(message);
                continue;
            }
            match site.ctx {
                Some(ctx) => ctx.run().report_hook_failure(
                    f.handler.label(),
                    event.kind(),
                    f.duration,
                    message,
                ),
                None => tracing::warn!(%message, "a command hook failed; going on"),
            }
        }
        if let Some(message) = fatal {
            return Err(message.into());
        }
        if let (Some((script, reason)), Some(ctx)) = (stop, site.ctx) {
            ctx.run().stop_at(
                tokio::time::Instant::now(),
                StopReason::Hook {
                    hook: script,
                    reason,
                },
            );
        }
        Ok(merged)
    }

    /// Reports a handler's `systemMessage`.
    fn system_message(&self, site: &Site<'_>, script: &str, event: EventName, message: &str) {
        match site.ctx {
            Some(ctx) => ctx.emit(
                "system_message",
                json!({"hook": script, "event": event.name(), "message": message}),
            ),
            None => tracing::info!(hook = %script, %event, %message, "hook system message"),
        }
    }
}

/// The payload field an event's matcher is tested against, for events whose matcher is not a
/// tool name: SessionStart's `source`, SessionEnd's `reason`, the compactions' `trigger`.
fn matcher_field(event: EventName) -> Option<&'static str> {
    match event {
        EventName::SessionStart => Some("source"),
        EventName::SessionEnd => Some("reason"),
        EventName::PreCompact | EventName::PostCompact => Some("trigger"),
        _ => None,
    }
}
