//! Progress of long work (a model download, a model load) on stderr: a bar on a terminal, a
//! line at the start and the end otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress display for one piece of work measured in bytes.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Progress {
    /// Progress of `label`; `quiet` shows nothing at all (for `--json`).
    pub(crate) fn bytes(label: impl Into<String>, quiet: bool) -> Self {
        let label = label.into();
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_message(label.clone());
            bar
        });
        if bar.is_none() && !quiet {
            eprintln!("{label} ...");
        }
        Progress { bar, quiet }
    }

    /// `done` of `total` bytes so far.
    pub(crate) fn update(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            if total > 0 && bar.length() != Some(total) {
                bar.set_length(total);
            }
            bar.set_position(done);
        }
    }

    /// The work is done: the bar is replaced by `message`.
    pub(crate) fn finish(self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}

/// A spinner while something of unknown length happens (the model thinking).
///
/// It draws on stderr's current line and clears that line when it stops, so it is only ever
/// shown on a line of its own: [`start`](Self::start) is called with the cursor at the start of
/// a line, and [`stop`](Self::stop) clears nothing when the spinner is not shown (a stop with
/// nothing shown would clear the line the answer is being written on).
pub(crate) struct Spinner {
    bar: Option<ProgressBar>,
    shown: bool,
}

impl Spinner {
    /// A spinner on stderr when it is a terminal and `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Spinner {
            bar: (enabled && std::io::stderr().is_terminal()).then(|| {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} {elapsed} · Ctrl-C to interrupt")
                        .expect("a valid template"),
                );
                bar
            }),
            shown: false,
        }
    }

    /// True when the spinner can be shown (stderr is a terminal).
    pub(crate) fn is_enabled(&self) -> bool {
        self.bar.is_some()
    }

    /// Shows the spinner with `message` (the cursor must be at the start of a line).
    pub(crate) fn start(&mut self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_owned());
            if !self.shown {
                bar.reset();
                bar.enable_steady_tick(std::time::Duration::from_millis(100));
                self.shown = true;
            }
        }
    }

    /// Changes the message of a spinner that is shown (nothing otherwise: progress does not
    /// bring back a spinner that output stopped).
    pub(crate) fn message(&mut self, message: String) {
        if let Some(bar) = &self.bar
            && self.shown
        {
            bar.set_message(message);
        }
    }

    /// Hides it (before output is printed), clearing its line; nothing when it is not shown.
    pub(crate) fn stop(&mut self) {
        if let Some(bar) = &self.bar
            && self.shown
        {
            bar.disable_steady_tick();
            bar.finish_and_clear();
            self.shown = false;
        }
    }
}
