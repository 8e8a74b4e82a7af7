//! W4: what one event costs a no-op hook of each kind — an in-process closure, a persistent
//! hook process, a spawned command — as the latency of one BeforeTool dispatch, p50 and p99.

use agentry::hooks::{BeforeTool, HookExt, Hooks, on};
use agentry::{RunContext, RunContextSpec};
use agentry_external::{
    CommandHooks, CommandSpec, EventName, HookSettings, PersistentSpec, WebhookSpec,
};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The kind of no-op hook W4 measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExternalKind {
    /// An async closure in the process.
    Closure,
    /// A persistent hook process (Python) answering JSON lines.
    Persistent,
    /// A command spawned per event: `/bin/sh -c 'exit 0'`.
    Spawned,
    /// A signed webhook to a server in this process on 127.0.0.1 (keep-alive), answering 200.
    Webhook,
}

/// Sets the webhook's signing secret in the environment, where the hook reads it. Call it before
/// any thread is started.
pub(crate) fn set_secret() {
    // SAFETY: called at the start of `main`, before the tokio runtime or any other thread
    // exists, so nothing reads the environment concurrently.
    unsafe {
        std::env::set_var(
            "AGENTRY_W4_SECRET",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
    };
}

/// A local webhook receiver that answers every POST with an empty 200; returns its URL.
async fn receiver() -> String {
    use axum::routing::post;
    let app = axum::Router::new().route("/hook", post(|| async { axum::http::StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding the bench's webhook receiver");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/hook")
}

/// A persistent no-op hook: answers each line with its id, without parsing the event.
const NO_OP_SERVER: &str = r#"import sys
out = sys.stdout
for line in sys.stdin:
    out.write('{"id":' + line[6:line.index(",")] + '}\n')
    out.flush()
"#;

fn context() -> RunContext {
    RunContext::detached(RunContextSpec::new("w4", "w4"))
}

async fn hooks(kind: ExternalKind, dir: &Path) -> Hooks {
    let mut hooks = Hooks::new();
    let external = |spec: agentry_external::HandlerSpec| {
        let mut settings = HookSettings::new();
        settings
            .add(EventName::PreToolUse, "", spec)
            .expect("the matcher is valid");
        CommandHooks::new(settings)
            .project_dir(dir)
            .state_dir(dir.join("state"))
    };
    match kind {
        ExternalKind::Closure => {
            hooks.add(on::before_tool(|ev, _ctx| async move { Ok(ev) }).named("no-op"));
        }
        ExternalKind::Persistent => {
            let command = match std::env::var("AGENTRY_W4_PERSISTENT") {
                // Another no-op hook process (in another language), to compare.
                Ok(command) => command,
                Err(_) => {
                    let script = dir.join("no_op.py");
                    std::fs::write(&script, NO_OP_SERVER).expect("writing the no-op hook");
                    format!("exec python3 {}", script.display())
                }
            };
            hooks.add(external(PersistentSpec::shell(command).into()));
        }
        ExternalKind::Spawned => {
            hooks.add(external(CommandSpec::shell("exit 0").into()));
        }
        ExternalKind::Webhook => {
            // The signing secret is read from `AGENTRY_W4_SECRET` at each delivery (see
            // `set_secret`).
            let spec = WebhookSpec::new(receiver().await).secret("${AGENTRY_W4_SECRET}");
            hooks.add(external(spec.into()));
        }
    }
    hooks
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// Dispatches `events` BeforeTool events (after `warmup` unmeasured ones) and reports the
/// latency of each.
pub(crate) async fn run(kind: ExternalKind, events: u32, current_thread: bool) -> Value {
    let dir = std::env::temp_dir().join(format!("agentry-w4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating the bench's directory");
    let hooks = hooks(kind, &dir).await;
    let ctx = context();
    let input = json!({"command": "ls -la", "description": "list"});
    let event = |i: u32| BeforeTool::new(format!("call_{i}"), "bash", input.clone());
    let warmup = (events / 10).clamp(1, 200);
    for i in 0..warmup {
        hooks
            .dispatch(event(i), &ctx)
            .await
            .expect("the hook answers");
    }
    let mut times = Vec::with_capacity(events as usize);
    let started = Instant::now();
    for i in 0..events {
        let ev = event(i);
        let t0 = Instant::now();
        let ev = hooks.dispatch(ev, &ctx).await.expect("the hook answers");
        times.push(t0.elapsed());
        assert!(ev.decision().is_none(), "a no-op hook decides nothing");
    }
    let wall = started.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    json!({
        "framework": "agentry",
        "workload": "w4",
        "runtime": if current_thread { "current_thread" } else { "multi_thread" },
        "hook_kind": format!("{kind:?}").to_lowercase(),
        "events": events,
        "p50_us": us(percentile(&times, 0.50)),
        "p99_us": us(percentile(&times, 0.99)),
        "mean_us": us(wall) / f64::from(events),
    })
}
