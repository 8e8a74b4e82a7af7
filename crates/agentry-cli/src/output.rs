//! Printing to stdout when stdout may be a pipe that closes early (`agentry runs | head`):
//! `println!` panics then; [`outln!`] ends the process quietly, as a program killed by SIGPIPE
//! would (SIGPIPE itself stays ignored, so a hook script that exits without reading its stdin
//! cannot kill `agentry`).

use std::io::Write;

/// Exit code of a process whose stdout closed (128 + SIGPIPE), as shells report it.
const BROKEN_PIPE_EXIT: i32 = 141;

/// `println!` for stdout that may close early.
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// Writes one line to stdout; ends the process when stdout is closed.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(BROKEN_PIPE_EXIT)
        }
        // Any other failure to print leaves nothing better to do than go on.
        Err(_) => {}
    }
}
