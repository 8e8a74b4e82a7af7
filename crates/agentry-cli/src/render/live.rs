//! The run live in a terminal: streamed text, tool calls and their results, hook decisions,
//! pauses, and a summary.

use super::{Render, short_input, short_result};
use crate::cost::Cost;
use crate::progress::Spinner;
use agentry::{Decision, RunEvent, RunOutput, StopReason};
use anstyle::{AnsiColor, Style};
use serde_json::Value;
use std::io::Write;
use std::time::Duration;

/// Renders a run for a person.
pub(crate) struct Live {
    out: Box<dyn Write + Send>,
    color: bool,
    /// The top-level agent's path: events of sub-agents are marked with theirs.
    root: Option<String>,
    /// The calls shown as started.
    started: std::collections::HashSet<String>,
    /// Streamed text left the cursor mid-line.
    mid_line: bool,
    spinner: Spinner,
    /// Hook decisions on calls whose start is not shown yet (hooks run before the call starts,
    /// but read better under it).
    decisions: Vec<(String, String)>,
    /// The streamed answer's markdown, styled (with colour only).
    markdown: Option<super::markdown::Markdown>,
}

const DIM: Style = Style::new().dimmed();
const BOLD: Style = Style::new().bold();
const TOOL: Style = AnsiColor::Cyan.on_default().bold();
const OK: Style = AnsiColor::Green.on_default();
const ERR: Style = AnsiColor::Red.on_default().bold();
const HOOK: Style = AnsiColor::Magenta.on_default().bold();
const WAIT: Style = AnsiColor::Yellow.on_default().bold();

impl Live {
    /// A renderer writing to `out`; `color` adds ANSI styles; `spinner` shows one on stderr
    /// while the model thinks (on a terminal).
    pub(crate) fn new(out: Box<dyn Write + Send>, color: bool, spinner: bool) -> Self {
        Live {
            out,
            color,
            root: None,
            started: std::collections::HashSet::new(),
            mid_line: false,
            spinner: Spinner::new(spinner),
            decisions: Vec::new(),
            markdown: color.then(super::markdown::Markdown::new),
        }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    fn end_line(&mut self) {
        // What the markdown styler still holds (a line's start), with its styles closed.
        if let Some(md) = &mut self.markdown {
            let rest = md.finish();
            if !rest.is_empty() {
                let _ = write!(self.out, "{rest}");
            }
        }
        if self.mid_line {
            let _ = writeln!(self.out);
            self.mid_line = false;
        }
    }

    /// `[child] ` for a sub-agent's event.
    fn prefix(&self, path: &str) -> String {
        match &self.root {
            Some(root) if root != path => {
                let inner = path.strip_prefix(root.as_str()).unwrap_or(path);
                self.paint(DIM, &format!("[{}] ", inner.trim_start_matches('/')))
            }
            _ => String::new(),
        }
    }

    fn line(&mut self, text: String) {
        self.spinner.stop();
        self.end_line();
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }
}

impl Render for Live {
    fn waiting(&mut self, waiting: bool) {
        if waiting {
            // The spinner draws on the current line and clears it when it stops: never on the
            // line streamed text left unfinished.
            if self.spinner.is_enabled() {
                self.end_line();
            }
            self.spinner.start("thinking…");
        } else {
            self.spinner.stop();
        }
    }

    fn event(&mut self, event: &RunEvent) {
        let path = event.agent_path().to_owned();
        match event {
            RunEvent::RunStarted { run_id, .. } => {
                if self.root.as_deref() == Some(path.as_str()) {
                    // The same run again, continued after a decision: nothing to announce.
                } else if self.root.is_none() {
                    // On stderr, so the answer alone is on stdout: its id, to resume, show or
                    // replay it (a unique start of it will do).
                    eprintln!("{}", self.paint(DIM, &format!("run {run_id}")));
                    self.root = Some(path);
                } else {
                    let p = self.prefix(&path);
                    self.line(format!("{p}{}", self.paint(DIM, "sub-agent started")));
                }
            }
            RunEvent::StepStarted { .. } => self.waiting(true),
            RunEvent::TextDelta { text, .. } => {
                self.spinner.stop();
                if !self.mid_line {
                    let p = self.prefix(&path);
                    let _ = write!(self.out, "{p}");
                }
                match &mut self.markdown {
                    Some(md) => {
                        let styled = md.push(text);
                        let _ = write!(self.out, "{styled}");
                    }
                    None => {
                        let _ = write!(self.out, "{text}");
                    }
                }
                let _ = self.out.flush();
                self.mid_line = !text.ends_with('\n');
            }
            RunEvent::ThinkingDelta { .. } => {}
            RunEvent::ModelProgress { progress, .. } => {
                let message = if progress.prompt_read < progress.prompt_tokens {
                    format!(
                        "reading the prompt {}/{} tokens",
                        progress.prompt_read, progress.prompt_tokens
                    )
                } else {
                    format!("thinking… {} tokens", progress.generated)
                };
                self.spinner.message(message);
            }
            RunEvent::ToolStarted {
                call_id,
                name,
                input,
                ..
            } => {
                // A call held for approval was shown when it was first asked for; when the run
                // goes on after the decision, its result follows without showing it again.
                if !self.started.insert(call_id.clone()) {
                    return;
                }
                let p = self.prefix(&path);
                let text = format!(
                    "{p}{} {} {}",
                    self.paint(TOOL, "→"),
                    self.paint(TOOL, name),
                    short_input(name, input)
                );
                self.line(text);
                let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.decisions)
                    .into_iter()
                    .partition(|(id, _)| id == call_id);
                self.decisions = others;
                for (_, line) in mine {
                    self.line(line);
                }
            }
            RunEvent::ToolFinished { result, .. } => {
                let p = self.prefix(&path);
                let text = if result.is_error {
                    format!("{p}  {} {}", self.paint(ERR, "✗"), short_result(result))
                } else if result.mocked {
                    format!(
                        "{p}  {} {} {}",
                        self.paint(OK, "←"),
                        self.paint(HOOK, "(mocked)"),
                        short_result(result)
                    )
                } else {
                    format!("{p}  {} {}", self.paint(OK, "←"), short_result(result))
                };
                self.line(text);
                self.waiting(true);
            }
            RunEvent::HookDecision {
                hook,
                decision,
                tool,
                detail,
                call_id,
                ..
            } => {
                let p = self.prefix(&path);
                let who = if hook.is_empty() {
                    "hooks".to_owned()
                } else {
                    format!("hook `{hook}`")
                };
                let text = format!(
                    "{p}  {} {who} {decision} {tool}: {}",
                    self.paint(HOOK, "⚑"),
                    super::short::cut_line(detail)
                );
                self.decisions.push((call_id.clone(), text));
            }
            RunEvent::HookFailed {
                hook, event, error, ..
            } => {
                let p = self.prefix(&path);
                // A command hook's error names its command and event already.
                let what = if error.contains(hook.as_str()) {
                    error.trim_end().to_owned()
                } else {
                    format!("hook `{hook}` failed on {event}: {}", error.trim_end())
                };
                let text = format!(
                    "{p}{} {what} {}",
                    self.paint(WAIT, "⚠ warning:"),
                    self.paint(DIM, "(the run goes on)")
                );
                self.line(text);
            }
            RunEvent::Compacted {
                removed, strategy, ..
            } => {
                let p = self.prefix(&path);
                let text = format!(
                    "{p}{}",
                    self.paint(DIM, &format!("compacted {removed} messages ({strategy})"))
                );
                self.line(text);
            }
            RunEvent::AwaitingApproval { pending, .. } => {
                for call in pending {
                    let p = self.prefix(&path);
                    let text = format!(
                        "{p}{} {} {} — {} (call {})",
                        self.paint(WAIT, "? approval needed:"),
                        self.paint(TOOL, &call.tool),
                        short_input(&call.tool, &call.input),
                        call.reason,
                        call.call_id
                    );
                    self.line(text);
                }
            }
            RunEvent::ApprovalResolved { decision, by, .. } => {
                let p = self.prefix(&path);
                let what = match decision {
                    Decision::Approve { call_id } => format!("approved {call_id}"),
                    Decision::Reject { call_id, reason } => format!("rejected {call_id}: {reason}"),
                    Decision::RejectAndStop { call_id, reason } => {
                        format!("rejected {call_id} and stopped: {reason}")
                    }
                };
                let text = format!("{p}  {}", self.paint(DIM, &format!("{what} (by {by})")));
                self.line(text);
            }
            RunEvent::Custom { name, data, .. } if name == agentry::TOOL_SOURCE_WARNING => {
                let p = self.prefix(&path);
                let message = data["message"].as_str().unwrap_or_default();
                let text = format!("{p}{} {message}", self.paint(WAIT, "⚠ warning:"));
                self.line(text);
            }
            RunEvent::Custom { name, data, .. } => {
                let p = self.prefix(&path);
                let text = format!("{p}{}", self.paint(DIM, &format!("[{name}] {data}")));
                self.line(text);
            }
            RunEvent::RunFailed { error, .. } if self.root.as_deref() != Some(&path) => {
                let p = self.prefix(&path);
                let text = format!("{p}{} {error}", self.paint(ERR, "sub-agent failed:"));
                self.line(text);
            }
            _ => {}
        }
    }

    fn finished(&mut self, out: &RunOutput<(), Value>, elapsed: Duration, cost: Option<Cost>) {
        self.spinner.stop();
        self.end_line();
        // A structured answer is shown whole (text answers were streamed).
        if let Some(output) = &out.output
            && out.stop == StopReason::FinalAnswer
            && !matches!(output, Value::String(_))
        {
            let pretty = serde_json::to_string_pretty(output).unwrap_or_default();
            let _ = writeln!(self.out, "{pretty}");
        }
        let stop = match &out.stop {
            StopReason::FinalAnswer if crate::drive::empty_answer(out) => {
                self.paint(ERR, "empty answer")
            }
            StopReason::FinalAnswer => self.paint(OK, "final answer"),
            StopReason::AwaitingApproval { .. } => self.paint(WAIT, "waiting for approval"),
            StopReason::Cancelled => self.paint(WAIT, "cancelled"),
            other => self.paint(ERR, &other.to_string()),
        };
        let cost = cost.map(|c| format!(" · {c}")).unwrap_or_default();
        let summary = format!(
            "{} · {} tokens ({} in, {} out){cost} · {:.1} s · {stop} · run {}",
            plural(u64::from(out.steps), "step"),
            out.usage.total(),
            out.usage.input_tokens,
            out.usage.output_tokens,
            elapsed.as_secs_f64(),
            short_id(&out.run_id)
        );
        let _ = writeln!(self.out, "{} {summary}", self.paint(BOLD, "──"));
        let _ = self.out.flush();
    }

    fn failed(&mut self, run_id: &str, error: &str) {
        self.spinner.stop();
        self.end_line();
        let _ = writeln!(
            self.out,
            "{} {error}{}",
            self.paint(ERR, "error:"),
            if run_id.is_empty() {
                String::new()
            } else {
                format!(" (run {run_id})")
            }
        );
        let _ = self.out.flush();
    }
}

/// `n` and `noun`, with an `s` unless `n` is 1.
fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A run id as the summary shows it: a UUID's first eight digits (any command takes a unique
/// start of an id; the whole one is printed when the run starts), else the whole id.
fn short_id(id: &str) -> &str {
    let uuid = id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    match uuid {
        true => &id[..8],
        false => id,
    }
}
