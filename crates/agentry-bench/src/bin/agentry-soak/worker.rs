//! A soak worker: a process that starts runs and resumes the runs whose driver is gone (killed)
//! or that failed, until it is killed, or, draining, until no run is left to finish.

use agentry::builtins::Redactor;
use agentry::prelude::*;
use agentry::{RetryPolicy, RunQuery, RunStatus, RunStore, ToolFailure};
use agentry_external::{CommandHooks, HookSettings};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a run's lease lasts: a killed worker's runs are resumed this long after its death.
pub(crate) const LEASE: Duration = Duration::from_secs(2);
/// How often a failed run is resumed before the soak leaves it failed.
pub(crate) const MAX_RESUMES: usize = 25;

/// What a worker is told.
pub(crate) struct WorkerArgs {
    pub(crate) store: String,
    pub(crate) provider: String,
    pub(crate) out: PathBuf,
    pub(crate) concurrency: usize,
    pub(crate) drain: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Work {
    n: u32,
}

/// The pattern of the secret every tool result carries: masked by the runtime's redactor in
/// what runs report, so the check finds it in no log and no event.
pub(crate) const SECRET_PATTERN: &str = r"ACCT-\d{8}";

/// The script every PreToolUse and PostToolUse command hook runs (Claude Code's protocol): it
/// appends what it read on stdin to `hook-stdin.log`, and one time in twenty each prints
/// garbage, exits with an error, or hangs past its 1 s timeout (its process group is killed).
pub(crate) const HOOK_SCRIPT: &str = r#"#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> "$SOAK_OUT/hook-stdin.log"
roll=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
case $((roll % 20)) in
  0) echo 'this is {not the protocol'"'"'s JSON'; exit 0 ;;
  1) echo 'the hook crashed' >&2; exit 1 ;;
  2) sleep 5 ;;
esac
exit 0
"#;

/// The command hooks of every soak run: [`HOOK_SCRIPT`] on every tool call, before and after.
fn command_hooks(out: &Path) -> CommandHooks {
    let handler = json!({
        "type": "command",
        "command": format!("sh '{}'", out.join("hook.sh").display()),
        "timeout": 1
    });
    let settings = HookSettings::from_value(&json!({"hooks": {
        "PreToolUse": [{"hooks": [handler.clone()]}],
        "PostToolUse": [{"hooks": [handler]}]
    }}))
    .expect("the soak's hook settings");
    CommandHooks::new(settings).project_dir(out)
}

/// The soak's agent: its `work` tool appends a line per call to `effects.log` (the side effect
/// the check counts) and fails one call in ten (after its side effect); its results carry a
/// secret of [`SECRET_PATTERN`].
pub(crate) fn agent(provider: &str, key: &str, out: &Path) -> Agent {
    let model = agentry::OpenAi::builder("soak")
        .base_url(provider)
        .api_key(key)
        .retry(
            RetryPolicy::default()
                .max_retries(6)
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_millis(40)),
        )
        .build()
        .expect("the soak's model client");
    let effects = Arc::new(out.join("effects.log"));
    let work = tool(
        "work",
        "Does one step of work.",
        move |a: Work, ctx: ToolCtx| {
            let effects = effects.clone();
            async move {
                let pause = 10 + (a.n as u64 * 7 + ctx.call_id().len() as u64) % 40;
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let line = format!(
                    "{}\t{}\t{}\t{}\n",
                    ctx.run().run_id(),
                    ctx.call_id(),
                    ctx.idempotency_key(),
                    std::process::id()
                );
                // One write of a short line to a file opened for appending: whole, even beside
                // other processes.
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&*effects)?;
                file.write_all(line.as_bytes())?;
                if ctx.call_id().bytes().map(u32::from).sum::<u32>() % 10 == 7 {
                    return Err(ToolFailure::new("the work failed this time"));
                }
                let account = ctx.call_id().bytes().map(u64::from).product::<u64>() % 100_000_000;
                Ok(format!("step {} done for account ACCT-{account:08}", a.n))
            }
        },
    );
    Agent::builder("soak")
        .instructions("Work through the steps.")
        .model(model)
        .tool(work)
        .build()
        .expect("the soak's agent")
}

/// The runtime of every soak worker, before its store: the redactor and the command hooks.
pub(crate) fn runtime(out: &Path) -> Runtime {
    // Its own pattern only: the built-in key patterns would mask the API key in the logs, and
    // the check looks for the key to find what leaks it.
    let redactor = Redactor::without_defaults()
        .pattern(SECRET_PATTERN)
        .expect("the soak's secret pattern");
    Runtime::new().redact(redactor).with(command_hooks(out))
}

/// Logs everything at debug level to stderr (the worker's log, which the check reads for the
/// key and the secret).
pub(crate) fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "debug,hyper=info,hyper_util=info,h2=info,rustls=info,sqlx=warn,tonic=info,tower=info",
        ))
        .with_writer(std::io::stderr)
        .init();
}

/// Runs a worker until it is killed or, draining, until every run has ended.
pub(crate) async fn run(args: WorkerArgs) {
    log_to_stderr();
    let key = std::env::var("SOAK_API_KEY").expect("SOAK_API_KEY");
    let store = crate::open_store(&args.store).await;
    let runtime = runtime(&args.out).store(store.clone()).lease_ttl(LEASE);
    let agent = agent(&args.provider, &key, &args.out);
    let mut running = tokio::task::JoinSet::new();
    let mut resumed: std::collections::HashMap<String, usize> = Default::default();
    let started = Instant::now();
    loop {
        // Resume what a killed worker left, and what failed (a provider fault).
        let left = unfinished(&*store).await;
        let waiting = left.iter().any(|run| {
            run.status == RunStatus::Running
                || resumed.get(&run.run_id).copied().unwrap_or(0) < MAX_RESUMES
        });
        for run in left {
            if running.len() >= args.concurrency * 2 {
                break;
            }
            let tries = resumed.entry(run.run_id.clone()).or_default();
            let now = agentry::store::now_ms();
            let resumable =
                run.driver_gone(now) || (run.status == RunStatus::Failed && *tries < MAX_RESUMES);
            if !resumable {
                continue;
            }
            *tries += 1;
            let (runtime, agent, id) = (runtime.clone(), agent.clone(), run.run_id.clone());
            running.spawn(async move {
                // Another worker may take it first (a `Leased` error: nothing was done), or
                // it fails again; what the store holds is what the check reads.
                let _ = runtime.resume(&agent, &id).await;
            });
        }
        if !args.drain {
            while running.len() < args.concurrency {
                let (runtime, agent) = (runtime.clone(), agent.clone());
                let input = format!("soak run {}", uuid::Uuid::new_v4().simple());
                running.spawn(async move {
                    let _ = runtime.run(&agent, input).await;
                });
            }
        }
        if args.drain && running.is_empty() && !waiting {
            return;
        }
        if args.drain && started.elapsed() > Duration::from_secs(300) {
            eprintln!("draining took more than 5 minutes; leaving what is left");
            return;
        }
        tokio::select! {
            _ = running.join_next(), if !running.is_empty() => {}
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}

/// The runs that have not finished.
async fn unfinished(store: &dyn RunStore) -> Vec<agentry::RunSummary> {
    let mut out = Vec::new();
    for status in [RunStatus::Running, RunStatus::Failed] {
        if let Ok(runs) = store.list(&RunQuery::all().status(status).limit(500)).await {
            out.extend(runs);
        }
    }
    out
}
