//! Run management: `runs`, `show`, `approve`, `reject`, `resume`, `cancel`.

use super::{Failure, failed, open, renderer};
use crate::cli::{Cli, RunsArgs};
use crate::drive::{Prompter, drive};
use crate::exit::Exit;
use crate::project::{CliAgent, Project};
use crate::render::short_input;
use agentry::{Decision, Message, RunQuery, RunStatus, StopReason, StoreError, StoredRun};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// `agentry runs`.
pub(super) async fn runs(cli: &Cli, args: &RunsArgs) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    let mut query = RunQuery::all().limit(args.limit);
    if let Some(status) = &args.status {
        let parsed = RunStatus::parse(status).ok_or_else(|| {
            (
                Exit::Usage,
                format!(
                    "`{status}` is not a run status; use running, awaiting_approval, finished, failed or cancelled"
                ),
            )
        })?;
        query = query.status(parsed);
    }
    if let Some(agent) = &args.agent {
        query = query.agent(agent.clone());
    }
    if let Some(session) = &args.session {
        query.session_id = Some(session.clone());
    }
    let runs = project
        .store
        .list(&query)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let now = agentry_core::store::now_ms();
    if cli.json {
        for r in &runs {
            outln!(
                "{}",
                json!({
                    "run_id": r.run_id, "agent": r.agent, "session_id": r.session_id,
                    "parent_run_id": r.parent_run_id, "status": r.status, "step": r.step,
                    "created_ms": r.created_ms, "updated_ms": r.updated_ms,
                    "driver_gone": r.driver_gone(now),
                })
            );
        }
        return Ok(Exit::Ok);
    }
    if runs.is_empty() {
        outln!("no runs in {}", project.store_label);
        return Ok(Exit::Ok);
    }
    outln!(
        "{:<38} {:<14} {:<36} {:>5}  {:<20} SESSION",
        "RUN",
        "AGENT",
        "STATUS",
        "STEPS",
        "UPDATED"
    );
    for r in runs {
        // A running run whose lease lapsed: the process driving it died.
        let status = match r.driver_gone(now) {
            true => format!("{} (driver gone, resumable)", r.status.as_str()),
            false => r.status.as_str().to_owned(),
        };
        outln!(
            "{:<38} {:<14} {:<36} {:>5}  {:<20} {}",
            r.run_id,
            r.agent,
            status,
            r.step,
            ago(r.updated_ms),
            r.session_id.unwrap_or_default()
        );
    }
    Ok(Exit::Ok)
}

/// How long ago `ms` (Unix milliseconds) was.
pub(super) fn ago(ms: i64) -> String {
    let now = agentry_core::store::now_ms();
    let secs = ((now - ms).max(0) / 1000) as u64;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

pub(super) async fn load(project: &Project, run: &str) -> Result<StoredRun, Failure> {
    project
        .store
        .load(run)
        .await
        .map_err(|e| failed(e.to_string()))?
        .ok_or_else(|| {
            failed(format!(
                "{} has no run `{run}`; `agentry runs` lists them",
                project.store_label
            ))
        })
}

/// `agentry show RUN [--events]`.
pub(super) async fn show(cli: &Cli, run: &str, events: bool) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    let stored = load(&project, run).await?;
    let snap = &stored.snapshot;
    if events {
        let events = project
            .store
            .events(run)
            .await
            .map_err(|e| failed(e.to_string()))?;
        for e in events {
            if cli.json {
                outln!(
                    "{}",
                    json!({"seq": e.seq, "kind": e.event.kind, "at_ms": e.event.at_ms, "data": e.event.data})
                );
            } else {
                outln!("#{:<4} {:<18} {}", e.seq, e.event.kind, e.event.data);
            }
        }
        return Ok(Exit::Ok);
    }
    if cli.json {
        outln!(
            "{}",
            serde_json::to_string(snap).map_err(|e| failed(e.to_string()))?
        );
        return Ok(Exit::Ok);
    }
    outln!("run      {}", snap.run_id);
    outln!("agent    {}", snap.agent);
    outln!("status   {}", snap.status());
    if let Some(stop) = &snap.stop {
        outln!("stop     {stop}");
    }
    if let Some(error) = &snap.error {
        outln!("error    {error}");
    }
    if let Some(session) = &snap.session_id {
        outln!("session  {session}");
    }
    outln!(
        "steps    {} · {} tokens ({} in, {} out)",
        snap.step,
        snap.usage.total(),
        snap.usage.input_tokens,
        snap.usage.output_tokens
    );
    outln!();
    for m in snap.messages.iter() {
        match m {
            Message::System { content } => outln!("system: {content}"),
            Message::User { content } => outln!("user: {content}"),
            Message::Assistant { content, .. } => {
                if !content.is_empty() {
                    outln!("assistant: {content}");
                }
                for call in m.tool_calls() {
                    outln!("  → {} {} (call {})", call.name, call.arguments, call.id);
                }
            }
            Message::Tool(result) => {
                let mark = if result.is_error { "✗" } else { "←" };
                outln!(
                    "  {mark} {}: {}",
                    result.name,
                    result.content.describe().trim()
                );
            }
        }
    }
    if let Some(StopReason::AwaitingApproval { pending }) = &snap.stop {
        outln!();
        for p in pending {
            outln!(
                "waiting: {} {} — {} (call {})",
                p.tool,
                short_input(&p.tool, &p.input),
                p.reason,
                p.call_id
            );
        }
        outln!("decide with `agentry approve {run}` or `agentry reject {run} --reason ...`");
    }
    Ok(Exit::Ok)
}

/// The decisions for `call` (every pending call when `None`) of a paused run.
async fn decisions(
    project: &Project,
    run: &str,
    call: Option<&str>,
    make: impl Fn(&str) -> Decision + Copy,
) -> Result<(String, Vec<Decision>), Failure> {
    let stored = load(project, run).await?;
    let Some(StopReason::AwaitingApproval { pending }) = &stored.snapshot.stop else {
        return Err(failed(format!(
            "run `{run}` is not waiting for approval (it is {})",
            stored.snapshot.status()
        )));
    };
    let ids: Vec<&str> = pending.iter().map(|p| p.call_id.as_str()).collect();
    // The runtime takes a decision for every pending call at once, so naming one call
    // decides a run that waits for that call alone.
    let chosen: Vec<Decision> = match call {
        None => ids.iter().map(|id| make(id)).collect(),
        Some(id) if !ids.contains(&id) => {
            return Err(failed(format!(
                "run `{run}` has no pending call `{id}`; its pending calls are: {}",
                ids.join(", ")
            )));
        }
        Some(_) if ids.len() > 1 => {
            return Err(failed(format!(
                "run `{run}` waits for {} calls ({}); decide each: name no call to decide them all alike",
                ids.len(),
                ids.join(", ")
            )));
        }
        Some(id) => vec![make(id)],
    };
    Ok((stored.snapshot.agent.clone(), chosen))
}

/// Continues a paused run with decisions, live.
async fn continue_decided(
    cli: &Cli,
    project: &Project,
    run: &str,
    agent_name: &str,
    decisions: Vec<Decision>,
    color: bool,
) -> Result<Exit, Failure> {
    let agent = project
        .agent(Some(agent_name))
        .map_err(|e| (Exit::Usage, e))?;
    let handle = project.runtime.decide(agent, run, decisions).start();
    let mut render = renderer(cli, color, project);
    let prompter = Prompter::new(project, cli.json);
    let exit = drive(project, agent, handle, render.as_mut(), &prompter).await;
    end_session_of(project, run).await;
    Ok(exit)
}

/// Ends the session of run `run` for the command hooks, as the command that drove it exits.
async fn end_session_of(project: &Project, run: &str) {
    if let Ok(Some(stored)) = project.store.load(run).await
        && let Some(session) = &stored.snapshot.session_id
    {
        project.end_session(session, "other").await;
    }
}

/// `agentry approve RUN [CALL]`.
pub(super) async fn approve(
    cli: &Cli,
    run: &str,
    call: Option<&str>,
    color: bool,
) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let (agent, decisions) = decisions(&project, run, call, |id| Decision::approve(id)).await?;
    continue_decided(cli, &project, run, &agent, decisions, color).await
}

/// The decision `agentry reject --reason R [--stop]` gives a call: the model is told `reason`,
/// or with `stop` the run ends.
pub(super) fn rejection(reason: &str, stop: bool) -> impl Fn(&str) -> Decision + Copy + '_ {
    move |id| match stop {
        true => Decision::reject_and_stop(id, reason),
        false => Decision::reject(id, reason),
    }
}

/// `agentry reject RUN [CALL] --reason R [--stop]`.
pub(super) async fn reject(
    cli: &Cli,
    run: &str,
    call: Option<&str>,
    reason: &str,
    stop: bool,
    color: bool,
) -> Result<Exit, Failure> {
    let project = open(cli, false).await?;
    let (agent, decisions) = decisions(&project, run, call, rejection(reason, stop)).await?;
    continue_decided(cli, &project, run, &agent, decisions, color).await
}

/// `agentry resume RUN`: checks the run can be taken up (no live process drives it) before a
/// model is loaded, and says which calls it runs again.
pub(super) async fn resume(cli: &Cli, run: &str, color: bool) -> Result<Exit, Failure> {
    let prompter;
    {
        let check = open(cli, true).await?;
        prompter = Prompter::new(&check, cli.json);
        let stored = load(&check, run).await?;
        let now = agentry_core::store::now_ms();
        if stored.snapshot.status() == RunStatus::Running && !stored.driver_gone(now) {
            return Err((
                Exit::Leased,
                format!(
                    "run `{run}` is driven by another process (its lease lapses in {} s): let \
                     it finish, or `agentry cancel {run}`",
                    stored.lease_remaining(now).as_secs().max(1)
                ),
            ));
        }
        let again = stored.snapshot.unsettled_calls();
        if !again.is_empty() {
            eprintln!(
                "resuming runs {} again: {} never recorded, so what {} did before may be done twice:",
                plural(again.len(), "call", "calls"),
                if again.len() == 1 {
                    "its outcome was"
                } else {
                    "their outcomes were"
                },
                if again.len() == 1 { "it" } else { "they" },
            );
            for call in &again {
                let input: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                eprintln!(
                    "  {} {} (call {})",
                    call.name,
                    short_input(&call.name, &input),
                    call.id
                );
            }
            if prompter.interactive && !prompter.confirm("run them again? [y]es, [n]o ").await {
                eprintln!("left as it is: `agentry resume {run}` when you are ready");
                return Ok(Exit::Stopped);
            }
        }
    }
    let project = open(cli, false).await?;
    let stored = load(&project, run).await?;
    let agent = project
        .agent(Some(&stored.snapshot.agent))
        .map_err(|e| (Exit::Usage, e))?;
    let handle = project.runtime.resume(agent, run).start();
    let mut render = renderer(cli, color, &project);
    let exit = drive(&project, agent, handle, render.as_mut(), &prompter).await;
    end_session_of(&project, run).await;
    Ok(exit)
}

/// `n` and the noun that goes with it.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `agentry cancel RUN`: a paused run is stored cancelled (its calls left undecided, asked
/// again on resume); an interrupted one is claimed and ended as cancelled. A run another process drives is left to it.
pub(super) async fn cancel(cli: &Cli, run: &str) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    let stored = load(&project, run).await?;
    let agent = project
        .agent(Some(&stored.snapshot.agent))
        .map_err(|e| (Exit::Usage, e))?;
    let status = stored.snapshot.status();
    let out = match &stored.snapshot.stop {
        Some(StopReason::AwaitingApproval { .. }) => {
            // Stored `cancelled`, its calls undecided: `resume` asks for them again.
            project
                .runtime
                .cancel_paused(run)
                .await
                .map(|()| StopReason::Cancelled)
        }
        None | Some(StopReason::Cancelled) if status != RunStatus::Cancelled => {
            let handle = project.runtime.resume(agent, run).start();
            handle.cancel();
            handle.result().await.map(|out| out.stop)
        }
        _ => {
            return Err(failed(format!(
                "run `{run}` already ended ({status}); there is nothing to cancel"
            )));
        }
    };
    match out {
        Ok(stop) => {
            if cli.json {
                outln!("{}", json!({"run_id": run, "stop": stop}));
            } else {
                outln!("run {run}: {stop}");
            }
            Ok(Exit::Ok)
        }
        Err(agentry::Error::Store(StoreError::Leased { .. })) => {
            cancel_live(cli, &project, agent, run).await
        }
        Err(e) => Err((Exit::of_error(&e), e.to_string())),
    }
}

/// How long `cancel` waits for the process driving a run to stop it (or, when that process
/// died, for its lease to lapse: 30 s by default).
const CANCEL_WAIT: Duration = Duration::from_secs(45);

/// Cancels a run another process drives: records a cancel request in the store, which that
/// process sees within seconds (when it renews the run's lease) and acts on; waits until the
/// run is checkpointed as cancelled. When that process died instead, the run is claimed and
/// cancelled here once its lease lapses: one command either way.
async fn cancel_live(
    cli: &Cli,
    project: &Project,
    agent: &CliAgent,
    run: &str,
) -> Result<Exit, Failure> {
    project
        .store
        .request_cancel(run)
        .await
        .map_err(|e| failed(e.to_string()))?;
    if !cli.json {
        eprintln!("run {run} is driven by another process: asked it to cancel the run …");
    }
    let started = Instant::now();
    loop {
        let stored = load(project, run).await?;
        let snap = &stored.snapshot;
        if snap.status() != RunStatus::Running || snap.stop.is_some() {
            let stop = snap.stop.as_ref().map(ToString::to_string);
            if cli.json {
                outln!("{}", json!({"run_id": run, "stop": snap.stop}));
            } else {
                outln!(
                    "run {run}: {}",
                    stop.unwrap_or_else(|| snap.status().to_string())
                );
            }
            return Ok(Exit::Ok);
        }
        if stored.driver_gone(agentry_core::store::now_ms()) {
            let handle = project.runtime.resume(agent, run).start();
            handle.cancel();
            match handle.result().await {
                // Checkpointed as cancelled: the next look reports it.
                Ok(_) | Err(agentry::Error::Store(StoreError::Leased { .. })) => continue,
                Err(e) => return Err((Exit::of_error(&e), e.to_string())),
            }
        }
        if started.elapsed() > CANCEL_WAIT {
            return Err(failed(format!(
                "run `{run}` is still running {} s after the cancel request: the process driving \
                 it may be stuck or unable to reach the store; the request stays recorded",
                CANCEL_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
