//! Driving a started run to its end in the terminal: its events rendered, Ctrl-C (or SIGTERM,
//! SIGHUP) cancelling it, and approvals asked for inline when a person is at the terminal.

use crate::exit::Exit;
use crate::project::{CliAgent, Project};
use crate::render::{Render, short_input};
use crate::signals::Signals;
use agentry::{Decision, PendingApproval, RunHandle, RunOutput, StopReason};
use futures::StreamExt;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How the person at the terminal is asked, and what they allowed for the rest of the command.
pub(crate) struct Prompter {
    /// Ask inline (stdin and stderr are a terminal and `--no-prompt` was not given).
    pub interactive: bool,
    /// The workspace's root, which the calls' paths are relative to (for Write/Edit diffs).
    workspace: PathBuf,
    /// Where `always` answers are kept (the project's `.agentry/local.toml`).
    local_config: PathBuf,
    /// The tools a person allowed for this session: their calls are approved without asking.
    allowed: Arc<Mutex<BTreeSet<String>>>,
}

/// What a person allowed beyond one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Allow {
    /// Only this call.
    Once,
    /// Every call of the tool until the command exits.
    Session,
    /// Every call of the tool in this project, from now on (kept in its local settings).
    Always,
}

impl Prompter {
    /// Inline prompts for `project` when stdin and stderr are terminals, unless `disabled`.
    pub(crate) fn new(project: &Project, disabled: bool) -> Self {
        Prompter {
            interactive: !disabled
                && std::io::stdin().is_terminal()
                && std::io::stderr().is_terminal(),
            workspace: project.workspace.clone(),
            local_config: crate::config::local_config_path(&project.file),
            allowed: Arc::default(),
        }
    }

    /// Asks for a decision on each pending call (calls of a tool allowed for this session are
    /// approved without asking); `None` when the person leaves it for later, or stops the
    /// command at the prompt (Ctrl-C, SIGTERM, SIGHUP): the run stays paused.
    pub(crate) async fn decide(
        &self,
        pending: &[PendingApproval],
        signals: &mut Signals,
    ) -> Option<Vec<Decision>> {
        let pending = pending.to_vec();
        let allowed = self
            .allowed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let workspace = self.workspace.clone();
        // The terminal is read on a thread of its own, so a signal still ends the prompt; not
        // one of the runtime's, which would hold the command's exit until a line is typed.
        let (tx, asking) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Prompter::ask(&pending, allowed, &workspace));
        });
        let answered = tokio::select! {
            answered = asking => answered.ok().flatten(),
            stop = signals.next() => {
                eprintln!("\n{}: the run stays paused", stop.name());
                None
            }
        }?;
        let mut decisions = Vec::with_capacity(answered.len());
        for (decision, tool, allow) in answered {
            if allow != Allow::Once {
                self.allowed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(tool.clone());
            }
            if allow == Allow::Always {
                match crate::config::allow_always(&self.local_config, &tool) {
                    Ok(()) => eprintln!(
                        "{tool} is allowed in this project from now on ({}: allowed_tools)",
                        self.local_config.display()
                    ),
                    Err(e) => eprintln!("warning: {tool} is allowed for this session only: {e}"),
                }
            }
            decisions.push(decision);
        }
        Some(decisions)
    }

    /// Asks the person a yes-or-no `question`; a signal, an end of input or anything but yes is
    /// no.
    pub(crate) async fn confirm(&self, question: &str) -> bool {
        eprint!("{question}");
        let _ = std::io::stderr().flush();
        let (tx, answer) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut signals = Signals::new();
        tokio::select! {
            line = answer => matches!(
                line.unwrap_or_default().trim().to_lowercase().as_str(),
                "y" | "yes"
            ),
            _ = signals.next() => false,
        }
    }

    /// Reads a decision on each pending call from the terminal, with what it allows beyond the
    /// call; calls of a tool in `allowed` (or allowed by an earlier answer) are approved.
    fn ask(
        pending: &[PendingApproval],
        mut allowed: BTreeSet<String>,
        workspace: &std::path::Path,
    ) -> Option<Vec<(Decision, String, Allow)>> {
        let mut decisions = Vec::new();
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        for call in pending {
            let tool = call.tool.clone();
            if allowed.contains(&tool) {
                eprintln!(
                    "{tool} {}: approved (allowed for this session)",
                    short_input(&tool, &call.input)
                );
                decisions.push((Decision::approve(&call.call_id), tool, Allow::Once));
                continue;
            }
            // The call and why it asks are on the line above (the run's awaiting_approval
            // event); several calls are told apart here.
            if pending.len() > 1 {
                eprintln!("{tool} {}:", short_input(&tool, &call.input));
            }
            match crate::render::file_change(&tool, &call.input, workspace) {
                Some(diff) => print_diff(&diff),
                None => eprintln!("  input: {}", call.input),
            }
            eprintln!(
                "  (s: every {tool} call until agentry exits · A: always here, kept in .agentry/local.toml)"
            );
            loop {
                eprint!("[a]pprove, [s]ession, [A]lways, [r]eject, s[t]op, [l]ater? ");
                let _ = std::io::stderr().flush();
                let answer = lines.next()?.ok()?;
                let answer = answer.trim();
                let allow = match answer {
                    "A" | "always" => Some(Allow::Always),
                    "s" | "S" | "session" => Some(Allow::Session),
                    _ => match answer.to_lowercase().as_str() {
                        "a" | "approve" | "y" | "yes" => Some(Allow::Once),
                        _ => None,
                    },
                };
                if let Some(allow) = allow {
                    if allow != Allow::Once {
                        allowed.insert(tool.clone());
                    }
                    decisions.push((Decision::approve(&call.call_id), tool.clone(), allow));
                    break;
                }
                match answer.to_lowercase().as_str() {
                    "r" | "reject" | "n" | "no" => {
                        eprint!("reason (the model sees it): ");
                        let _ = std::io::stderr().flush();
                        let reason = lines.next()?.ok()?;
                        let reason = if reason.trim().is_empty() {
                            "rejected by a person".to_owned()
                        } else {
                            reason.trim().to_owned()
                        };
                        let decision = Decision::reject(&call.call_id, reason);
                        decisions.push((decision, tool.clone(), Allow::Once));
                        break;
                    }
                    "t" | "stop" => {
                        eprint!("reason: ");
                        let _ = std::io::stderr().flush();
                        let reason = lines.next()?.ok()?;
                        let reason = if reason.trim().is_empty() {
                            "stopped by a person".to_owned()
                        } else {
                            reason.trim().to_owned()
                        };
                        let decision = Decision::reject_and_stop(&call.call_id, reason);
                        decisions.push((decision, tool.clone(), Allow::Once));
                        break;
                    }
                    "l" | "later" | "" => return None,
                    _ => eprintln!("answer a, s, A, r, t or l"),
                }
            }
        }
        Some(decisions)
    }
}

/// Shows a diff on stderr: removed lines red, added lines green where colour is on.
fn print_diff(diff: &str) {
    use anstyle::{AnsiColor, Style};
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
    let mut err = anstream::stderr();
    for line in diff.lines() {
        let style = match line.as_bytes().first() {
            Some(b'-') if !line.starts_with("---") => red,
            Some(b'+') if !line.starts_with("+++") => green,
            _ => Style::new(),
        };
        let _ = writeln!(err, "  {style}{line}{style:#}");
    }
}

/// Renders `handle` to its end, continuing it after inline approvals; returns the exit code.
pub(crate) async fn drive(
    project: &Project,
    agent: &CliAgent,
    mut handle: RunHandle<(), Value>,
    render: &mut dyn Render,
    prompter: &Prompter,
) -> Exit {
    let started = Instant::now();
    let mut signals = Signals::new();
    loop {
        let run_id = handle.run_id().to_owned();
        let cancel = handle.cancellation();
        let mut interrupted = false;
        {
            let mut events = handle.events();
            loop {
                tokio::select! {
                    event = events.next() => match event {
                        Some(event) => {
                            // `--verbose`: every event of the run in its JSON form, on stderr.
                            if tracing::enabled!(target: "agentry::run", tracing::Level::DEBUG) {
                                tracing::debug!(
                                    target: "agentry::run",
                                    "{}",
                                    serde_json::to_string(&event).unwrap_or_default()
                                );
                            }
                            render.event(&event)
                        }
                        None => break,
                    },
                    stop = signals.next(), if !interrupted => {
                        interrupted = true;
                        // Cancelling interrupts the tool under way, which stops every process
                        // it started; the run is checkpointed `cancelled`.
                        eprintln!("\n{}: cancelling (Ctrl-C again to quit at once) …", stop.name());
                        cancel.cancel();
                        tokio::spawn(async {
                            Signals::new().next().await;
                            std::process::exit(Exit::Cancelled.code());
                        });
                    }
                }
            }
        }
        let out = match handle.result().await {
            Ok(out) => out,
            Err(e) => {
                render.failed(&run_id, &e.to_string());
                return Exit::of_error(&e);
            }
        };
        let asking =
            prompter.interactive && matches!(out.stop, StopReason::AwaitingApproval { .. });
        // A pause the person is asked about at once is not the run's end: no summary yet.
        if !asking {
            render.finished(
                &out,
                started.elapsed(),
                project.cost(agent.name(), &out.usage),
            );
        }
        let StopReason::AwaitingApproval { pending } = &out.stop else {
            return finish_hint(&out);
        };
        if !prompter.interactive {
            eprintln!(
                "run {} waits for approval: `agentry approve {0}` or `agentry reject {0} --reason ...`",
                out.run_id
            );
            return Exit::AwaitingApproval;
        }
        let Some(decisions) = prompter.decide(pending, &mut signals).await else {
            eprintln!(
                "left for later: `agentry approve {0}` or `agentry reject {0} --reason ...`",
                out.run_id
            );
            return Exit::AwaitingApproval;
        };
        handle = project
            .runtime
            .decide(agent, &out.run_id, decisions)
            .start();
    }
}

/// True when a run ended with a final answer that says nothing: no text and no structured
/// output (a model that returned an empty turn).
pub(crate) fn empty_answer(out: &RunOutput<(), Value>) -> bool {
    out.stop == StopReason::FinalAnswer
        && out.text.trim().is_empty()
        && match &out.output {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        }
}

/// The exit code of a run's end, with a hint for what can follow.
pub(crate) fn finish_hint(out: &RunOutput<(), Value>) -> Exit {
    match &out.stop {
        StopReason::FinalAnswer if empty_answer(out) => {
            eprintln!(
                "warning: the model's final answer is empty (it returned no text and no tool call); \
                 try again, or look at the model's output with `agentry show {} --events`",
                out.run_id
            );
            Exit::Stopped
        }
        StopReason::FinalAnswer | StopReason::Recovered { .. } => Exit::Ok,
        StopReason::Cancelled => {
            eprintln!("continue it with `agentry resume {}`", out.run_id);
            Exit::Cancelled
        }
        StopReason::AwaitingApproval { .. } => Exit::AwaitingApproval,
        _ => Exit::Stopped,
    }
}
