//! Firing one event at the command hooks that match it: every matching command runs at once
//! (identical ones once), and their answers merge, most restrictive first, into one decision.

use crate::command_hooks::Inner;
use crate::event_name::EventName;
use crate::process::{self, Invocation};
use crate::reply::{self, Permission, PermissionReply};
use crate::spec::{CommandSpec, HandlerSpec};
use agentry_core::StopReason;
use agentry_core::hooks::{BoxError, HookCtx};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where an event happens: the run (when there is one), its session and its transcript.
pub(crate) struct Site<'a> {
    pub(crate) ctx: Option<&'a HookCtx>,
    pub(crate) session_id: String,
    pub(crate) transcript: PathBuf,
}

/// What the matching commands decided together.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// The most restrictive permission decision, with the reasons given at that level.
    pub(crate) permission: Option<(Permission, Option<String>)>,
    /// Blocks, their reasons joined.
    pub(crate) block: Option<String>,
    /// The last `updatedInput` to arrive.
    pub(crate) updated_input: Option<Value>,
    /// Every command's context for the model.
    pub(crate) context: Vec<String>,
    /// The last replacement output to arrive.
    pub(crate) updated_output: Option<Value>,
    /// A permission request's decision: a deny wins.
    pub(crate) permission_request: Option<PermissionReply>,
}

/// A command that failed or broke the protocol.
struct Failure {
    script: String,
    /// What the handler is called in errors ("command hook", "webhook").
    noun: &'static str,
    /// The handler's own failure fails the event.
    closed: bool,
    duration: Duration,
    message: String,
    /// A field the event does not allow (strict mode fails on these), not a failure to run.
    violation: bool,
}

impl Merged {
    fn join(slot: &mut Option<String>, reason: String) {
        match slot {
            Some(existing) if !reason.is_empty() && *existing != reason => {
                existing.push('\n');
                existing.push_str(&reason);
            }
            Some(_) => {}
            None => *slot = Some(reason),
        }
    }

    fn take(&mut self, v: reply::Verdict) {
        if let Some((p, reason)) = v.permission {
            match &mut self.permission {
                Some((have, reasons)) if *have == p => {
                    if let Some(r) = reason {
                        Merged::join(reasons, r);
                    }
                }
                Some((have, _)) if *have > p => {}
                _ => self.permission = Some((p, reason)),
            }
        }
        if let Some(reason) = v.block {
            Merged::join(&mut self.block, reason);
        }
        if v.updated_input.is_some() {
            self.updated_input = v.updated_input;
        }
        if let Some(c) = v.context {
            self.context.push(c);
        }
        if v.updated_output.is_some() {
            self.updated_output = v.updated_output;
        }
        if let Some(pr) = v.permission_request {
            match &self.permission_request {
                Some(have) if !have.allow => {}
                _ => self.permission_request = Some(pr),
            }
        }
    }

    /// The context for the model, as Claude Code gives it: a system reminder.
    pub(crate) fn reminder(&self, event: EventName) -> Option<String> {
        if self.context.is_empty() {
            return None;
        }
        Some(format!(
            "<system-reminder>\n{event} hook additional context: {}\n</system-reminder>",
            self.context.join("\n")
        ))
    }
}

impl Inner {
    /// The commands registered for `event` whose matcher applies to `target`, each once.
    fn matching(&self, event: EventName, target: Option<&str>) -> Vec<&HandlerSpec> {
        let mut found: Vec<&HandlerSpec> = Vec::new();
        for g in self.settings.groups.iter().filter(|g| g.event == event) {
            let applies = match target {
                Some(t) if event.has_matcher() => g.matcher.matches(t),
                _ => true,
            };
            if applies {
                for spec in &g.hooks {
                    if !found.contains(&spec) {
                        found.push(spec);
                    }
                }
            }
        }
        found
    }

    /// True when some command is registered for `event`.
    pub(crate) fn has(&self, event: EventName) -> bool {
        self.settings.groups.iter().any(|g| g.event == event)
    }

    /// The payload's common fields.
    fn common(&self, event: EventName, site: &Site<'_>) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("session_id".into(), json!(site.session_id));
        m.insert(
            "transcript_path".into(),
            json!(site.transcript.display().to_string()),
        );
        m.insert("cwd".into(), json!(self.project_dir.display().to_string()));
        m.insert("permission_mode".into(), json!("default"));
        m.insert("hook_event_name".into(), json!(event.name()));
        if let Some(ctx) = site.ctx {
            if ctx.parent_run_id().is_some() {
                m.insert("agent_id".into(), json!(ctx.run_id()));
                m.insert("agent_type".into(), json!(ctx.agent_name()));
            }
            m.insert(
                "agentry".into(),
                json!({
                    "run_id": ctx.run_id(),
                    "agent_path": ctx.agent_path(),
                    "step": ctx.step(),
                }),
            );
        }
        m
    }

    /// The variables a persistent process starts with: those that hold for every run.
    fn lasting_env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "CLAUDE_PROJECT_DIR".to_string(),
                self.project_dir.display().to_string(),
            ),
            ("CLAUDECODE".into(), "1".into()),
            ("CLAUDE_PID".into(), std::process::id().to_string()),
        ];
        if let Some(root) = &self.plugin_root {
            env.push(("CLAUDE_PLUGIN_ROOT".into(), root.display().to_string()));
        }
        if let Some(data) = &self.plugin_data {
            env.push(("CLAUDE_PLUGIN_DATA".into(), data.display().to_string()));
        }
        env
    }

    /// The environment commands run with.
    fn env(&self, event: EventName, site: &Site<'_>) -> Vec<(String, String)> {
        let mut env = self.lasting_env();
        env.push(("CLAUDE_CODE_SESSION_ID".into(), site.session_id.clone()));
        env.push(("AGENTRY_HOOK_EVENT".into(), event.name().to_string()));
        if event == EventName::SessionStart {
            let file = self.env_file(&site.session_id);
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file);
            env.push(("CLAUDE_ENV_FILE".into(), file.display().to_string()));
        }
        if let Some(ctx) = site.ctx {
            env.push(("AGENTRY_RUN_ID".into(), ctx.run_id().to_string()));
            env.push(("AGENTRY_AGENT_PATH".into(), ctx.agent_path().to_string()));
        }
        env
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
        let specs = self.matching(event, target);
        if specs.is_empty() {
            return Ok(Merged::default());
        }
        let mut payload = self.common(event, site);
        fields(&mut payload);
        // `if` rules apply to tool calls only: on other events a handler with one never runs.
        let specs: Vec<&HandlerSpec> = match payload.get("tool_name").and_then(Value::as_str) {
            Some(tool) => {
                let input = payload.get("tool_input").unwrap_or(&Value::Null);
                specs
                    .into_iter()
                    .filter(|s| {
                        s.condition()
                            .is_none_or(|rule| crate::condition::applies(rule, tool, input))
                    })
                    .collect()
            }
            None => specs
                .into_iter()
                .filter(|s| s.condition().is_none())
                .collect(),
        };
        if specs.is_empty() {
            return Ok(Merged::default());
        }
        let mut bytes = serde_json::to_vec(&Value::Object(payload)).expect("a payload serializes");
        bytes.push(b'\n');
        let stdin: Arc<[u8]> = bytes.into();
        // Commands get the environment; nothing else needs one built per event.
        let env = if specs.iter().any(|s| matches!(s, HandlerSpec::Command(_))) {
            self.env(event, site)
        } else {
            Vec::new()
        };
        let default_timeout = event.default_timeout();
        let mut deliver = Vec::with_capacity(specs.len());
        for spec in specs {
            let timeout = spec.timeout().unwrap_or(default_timeout);
            match spec {
                HandlerSpec::Command(c) if c.background => {
                    self.spawn_background(
                        c.clone(),
                        event,
                        site,
                        stdin.clone(),
                        env.clone(),
                        timeout,
                    );
                }
                _ => deliver.push((spec, timeout)),
            }
        }
        // In the order they finish: the last `updatedInput` to arrive wins. One handler (the
        // common case) is awaited as it is, with no set of futures to hold it.
        let finished: Vec<_> = match deliver.as_slice() {
            [] => Vec::new(),
            [(spec, timeout)] => vec![self.timed(event, spec, stdin.clone(), &env, *timeout).await],
            all => {
                all.iter()
                    .map(|(spec, timeout)| self.timed(event, spec, stdin.clone(), &env, *timeout))
                    .collect::<FuturesUnordered<_>>()
                    .collect()
                    .await
            }
        };
        let mut merged = Merged::default();
        let mut failures = Vec::new();
        let mut stop: Option<(String, String)> = None;
        for (spec, started, outcome) in finished {
            let script = spec.display();
            let done = match outcome {
                Ok(done) => done,
                Err(e) => {
                    failures.push(Failure {
                        script,
                        noun: spec.noun(),
                        closed: spec.fails_closed(),
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
                            script: script.clone(),
                            noun: spec.noun(),
                            closed: spec.fails_closed(),
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
                    script,
                    noun: spec.noun(),
                    closed: spec.fails_closed(),
                    duration: done.duration,
                    message: e.to_string(),
                    violation: false,
                }),
            }
        }
        let mut fatal = None;
        for f in failures {
            let message = format!("{} `{}` on {event}: {}", f.noun, f.script, f.message);
            if ((self.fail_closed || f.closed) && !f.violation) || (self.strict && f.violation) {
                fatal.get_or_insert(message);
                continue;
            }
            match site.ctx {
                Some(ctx) => {
                    ctx.run()
                        .report_hook_failure(f.script, event.kind(), f.duration, message)
                }
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

    /// [`deliver`](Self::deliver), with the handler and when it started.
    async fn timed<'s>(
        &self,
        event: EventName,
        spec: &'s HandlerSpec,
        stdin: Arc<[u8]>,
        env: &[(String, String)],
        timeout: Duration,
    ) -> (&'s HandlerSpec, Instant, Result<process::Finished, String>) {
        let started = Instant::now();
        let outcome = self.deliver(event, spec, stdin, env, timeout).await;
        (spec, started, outcome)
    }

    /// Hands the payload to one handler and waits for what it says.
    async fn deliver(
        &self,
        event: EventName,
        spec: &HandlerSpec,
        stdin: Arc<[u8]>,
        env: &[(String, String)],
        timeout: Duration,
    ) -> Result<process::Finished, String> {
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
                let process = self.persistent(p);
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
                let client = self.http_client()?;
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

    fn system_message(&self, site: &Site<'_>, script: &str, event: EventName, message: &str) {
        match site.ctx {
            Some(ctx) => ctx.emit(
                "system_message",
                json!({"hook": script, "event": event.name(), "message": message}),
            ),
            None => tracing::info!(hook = %script, %event, %message, "hook system message"),
        }
    }

    /// Starts an `async: true` command: nothing waits for it, and it decides nothing; the
    /// context it gives reaches the model on the run's next model call, and its system message
    /// is reported when it comes.
    fn spawn_background(
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
        let later = self.later.clone();
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
                        later
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .entry(ctx.run_id().to_string())
                            .or_default()
                            .push(format!("{event} hook (in the background): {context}"));
                    }
                }
                Err(e) => {
                    tracing::warn!(hook = %script, %event, error = %e, "a background command hook failed")
                }
            }
        });
    }
}
