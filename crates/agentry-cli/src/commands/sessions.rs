//! Sessions as the terminal names them: a new one, the latest one (`--continue`), one chosen
//! from a list (`chat --resume`), and what one cost (`/cost`).

use super::{Failure, failed};
use crate::exit::Exit;
use crate::project::Project;
use agentry::{Message, RunQuery, RunSummary, Usage};
use std::io::{BufRead, Write};

/// How many sessions the picker lists.
const PICKER_SIZE: usize = 10;

/// A new session id.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The sessions of `agent`'s top-level runs in the store, the most recently active first, each
/// with its latest run.
async fn recent(project: &Project, agent: &str) -> Result<Vec<RunSummary>, Failure> {
    let runs = project
        .store
        .list(&RunQuery::all().agent(agent))
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut seen = std::collections::HashSet::new();
    Ok(runs
        .into_iter()
        .filter(|r| r.parent_run_id.is_none())
        .filter(|r| {
            r.session_id
                .as_ref()
                .is_some_and(|s| seen.insert(s.clone()))
        })
        .collect())
}

/// The session of `agent`'s latest top-level run, for `--continue`.
pub(crate) async fn latest(project: &Project, agent: &str) -> Result<String, Failure> {
    recent(project, agent)
        .await?
        .into_iter()
        .find_map(|r| r.session_id)
        .ok_or_else(|| {
            (
                Exit::Failed,
                format!(
                    "{} holds no session of agent `{agent}` to continue; start one without --continue",
                    project.store_label
                ),
            )
        })
}

/// Lists `agent`'s recent sessions on the terminal and reads which one to continue.
pub(crate) async fn pick(project: &Project, agent: &str) -> Result<String, Failure> {
    let sessions: Vec<RunSummary> = recent(project, agent)
        .await?
        .into_iter()
        .take(PICKER_SIZE)
        .collect();
    if sessions.is_empty() {
        return Err(failed(format!(
            "{} holds no session of agent `{agent}` to resume",
            project.store_label
        )));
    }
    eprintln!("sessions of `{agent}`, the latest first:");
    for (i, run) in sessions.iter().enumerate() {
        let first = first_prompt(project, &run.run_id).await;
        eprintln!(
            "  {:>2}. {:<10} {:<20} {}",
            i + 1,
            super::manage::ago(run.updated_ms),
            run.status.as_str(),
            first
        );
    }
    let count = sessions.len();
    let chosen = tokio::task::spawn_blocking(move || {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        loop {
            eprint!("which one (1-{count}, Enter for 1)? ");
            let _ = std::io::stderr().flush();
            let line = lines.next()?.ok()?;
            match line.trim() {
                "" => return Some(0),
                n => match n.parse::<usize>() {
                    Ok(n) if (1..=count).contains(&n) => return Some(n - 1),
                    _ => eprintln!("type a number from 1 to {count}"),
                },
            }
        }
    })
    .await
    .ok()
    .flatten()
    .ok_or_else(|| (Exit::Cancelled, "no session chosen".to_owned()))?;
    Ok(sessions[chosen].session_id.clone().unwrap_or_default())
}

/// The first line of the first prompt of run `run_id`, cut to fit a line.
async fn first_prompt(project: &Project, run_id: &str) -> String {
    let Ok(Some(stored)) = project.store.load(run_id).await else {
        return String::new();
    };
    let text = stored
        .snapshot
        .messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => {
                Some(content.describe().lines().next().unwrap_or("").to_owned())
            }
            _ => None,
        })
        .unwrap_or_default();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// What session `session`'s runs used and cost, as `/cost` shows it.
pub(crate) async fn cost(project: &Project, session: &str) -> Result<String, Failure> {
    let runs = project
        .store
        .list(&RunQuery::session(session))
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut usage = Usage::default();
    let mut cost = None::<crate::cost::Cost>;
    for run in runs.iter().filter(|r| r.parent_run_id.is_none()) {
        let Ok(Some(stored)) = project.store.load(&run.run_id).await else {
            continue;
        };
        let used = stored.snapshot.usage;
        if let Some(c) = project.cost(&run.agent, &used) {
            cost = Some(match cost {
                Some(sum) => crate::cost::Cost {
                    usd: sum.usd + c.usd,
                    local: sum.local && c.local,
                },
                None => c,
            });
        }
        usage += used;
    }
    let turns = runs.iter().filter(|r| r.parent_run_id.is_none()).count();
    let mut line = format!(
        "session {session}: {turns} turn{} · {} tokens ({} in, {} out)",
        if turns == 1 { "" } else { "s" },
        usage.total(),
        usage.input_tokens,
        usage.output_tokens
    );
    if let Some(cost) = cost {
        line.push_str(&format!(" · {cost}"));
    }
    Ok(line)
}
