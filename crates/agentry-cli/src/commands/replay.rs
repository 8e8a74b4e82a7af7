//! `agentry replay RUN`: a stored run run again with today's hooks, its recorded model turns
//! played back and its recorded tool results given back, so hook changes can be tried against
//! real history offline; then where the decisions differ (`agentry::replay` does the work).
//!
//! What runs: the agent of the config (its hooks, the runtime's hooks), in memory (nothing is
//! stored). What is played back: every model turn (text, reasoning, tool calls with their ids and
//! arguments verbatim) and every tool result. A call a hook now blocks, mocks or rewrites shows
//! as a difference; a call that did not run in the recording (a hook blocked it, a person
//! rejected it) and that the replay lets through gets an error result saying so.

use super::{Failure, failed, open};
use crate::cli::Cli;
use crate::exit::Exit;
use crate::render::{short_content, short_input};
use agentry::replay::{CallOutcome, ReplayReport};
use serde::Serialize;
use serde_json::Value;

/// `agentry replay RUN`.
pub(super) async fn replay(cli: &Cli, run: &str, agent: Option<&str>) -> Result<Exit, Failure> {
    let project = open(cli, true).await?;
    let stored = super::manage::load(&project, run).await?;
    let events = project
        .store
        .events(run)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let agent = project
        .agent(Some(agent.unwrap_or(&stored.snapshot.agent)))
        .map_err(|e| (Exit::Usage, e))?;
    let report = agentry::replay::replay(&project.runtime, agent, &events)
        .await
        .map_err(|e| failed(e.to_string()))?;
    print(&report, cli.json, run);
    Ok(if report.differences == 0 {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// One call's outcome, in a line: the decisions, then the result.
fn line(outcome: &CallOutcome) -> String {
    let result = match (&outcome.content, outcome.is_error) {
        (None, _) => "no result".to_owned(),
        (Some(content), Some(true)) => format!("error: {}", short_content(content)),
        (Some(content), _) => short_content(content),
    };
    match (outcome.decisions.is_empty(), outcome.kept_from_running()) {
        (true, _) => format!("ran → {result}"),
        // The result is the block's reason or the mock: the decision says it.
        (false, true) => outcome.decisions.join("; "),
        (false, false) => format!("{} → {result}", outcome.decisions.join("; ")),
    }
}

/// `--json`'s line: `{"type": "replay", "run_id", ...the report}`.
#[derive(Serialize)]
struct JsonLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    run_id: &'a str,
    #[serde(flatten)]
    report: &'a ReplayReport,
}

fn print(report: &ReplayReport, json: bool, run: &str) {
    if json {
        let line = serde_json::to_string(&JsonLine {
            kind: "replay",
            run_id: run,
            report,
        })
        .unwrap_or_default();
        outln!("{line}");
        return;
    }
    outln!(
        "replay of run {run}: {} recorded model turn(s) played back; no model called, no tool run",
        report.model_turns
    );
    for call in &report.calls {
        let input: Value = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        let head = format!("→ {} {}", call.tool, short_input(&call.tool, &input));
        if call.same {
            outln!("  {head}   same: {}", line(&call.recorded));
        } else {
            outln!("  {head}   DIFFERS");
            outln!("      recorded  {}", line(&call.recorded));
            outln!("      replay    {}", line(&call.replay));
        }
    }
    let end = |e: &Option<String>| e.clone().unwrap_or_else(|| "did not end".into());
    if report.recorded_end == report.replay_end {
        outln!("  end   same: {}", end(&report.recorded_end));
    } else {
        outln!("  end   DIFFERS");
        outln!("      recorded  {}", end(&report.recorded_end));
        outln!("      replay    {}", end(&report.replay_end));
    }
    match report.differences {
        0 => outln!("the replay matches the recording"),
        n => outln!("{n} difference(s)"),
    }
}
