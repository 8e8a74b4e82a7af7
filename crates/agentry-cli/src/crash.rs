//! What a panic shows: on the main thread, one line that says agentry crashed and how to get
//! the backtrace (`--verbose`); elsewhere (a hook's or a tool's task, whose failure the run
//! reports itself) nothing, unless `--verbose`, which shows every panic with its backtrace.

use std::backtrace::Backtrace;
use std::panic::PanicHookInfo;

/// Installs the panic report for this process.
pub(crate) fn report_panics(verbose: bool) {
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let main = thread.name() == Some("main");
        if verbose {
            eprintln!(
                "panic in thread `{}`: {}\n{}",
                thread.name().unwrap_or("unnamed"),
                describe(info),
                Backtrace::force_capture()
            );
        } else if main {
            eprintln!(
                "error: agentry crashed: {}\n  this is a bug; `--verbose` shows the backtrace to report it",
                describe(info)
            );
        }
    }));
}

/// The panic's message and place.
fn describe(info: &PanicHookInfo<'_>) -> String {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message,
    }
}
