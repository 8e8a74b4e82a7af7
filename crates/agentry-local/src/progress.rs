//! A progress line on stderr for fetching and loading models: updated in place on a terminal,
//! a line per tenth otherwise (so logs stay readable).

use std::io::{IsTerminal, Write};

/// Percent progress of one task, printed to stderr.
///
/// ```
/// let mut line = agentry_local::ProgressLine::new("loading");
/// line.update(50, 100);
/// line.finish("loaded");
/// ```
#[derive(Debug)]
pub struct ProgressLine {
    label: String,
    shown: Option<u64>,
    terminal: bool,
}

impl ProgressLine {
    /// A line for the task `label`.
    pub fn new(label: impl Into<String>) -> Self {
        ProgressLine {
            label: label.into(),
            shown: None,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Shows `done` of `total` when the percentage moved on (by one on a terminal, by ten
    /// otherwise).
    pub fn update(&mut self, done: u64, total: u64) {
        let percent = (done.min(total) * 100).checked_div(total).unwrap_or(0);
        let step = if self.terminal { 1 } else { 10 };
        if self.shown.is_some_and(|s| percent < s + step) {
            return;
        }
        self.shown = Some(percent - percent % step);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r{}: {percent:>3}%", self.label);
            let _ = err.flush();
        } else {
            let _ = writeln!(err, "{}: {percent:>3}%", self.label);
        }
    }

    /// Ends the line with `message` (on a terminal, it replaces whatever progress line is
    /// showing, this one's or another's).
    pub fn finish(&mut self, message: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = writeln!(err, "\r{message}\x1b[K");
        } else {
            let _ = writeln!(err, "{message}");
        }
    }
}
