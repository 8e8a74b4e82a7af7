//! The signals that stop what the command is doing: Ctrl-C (SIGINT), SIGTERM (how a service
//! manager or `kill` stops a process) and SIGHUP (the terminal closed). All three are handled as
//! Ctrl-C is: the run is cancelled and checkpointed, and the processes its tools started are
//! stopped with it, so nothing is left running when the command ends.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// A stopping signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopping {
    /// Ctrl-C.
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    HangUp,
}

impl Stopping {
    /// How it is named to the person.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stopping::Interrupt => "Ctrl-C",
            Stopping::Terminate => "SIGTERM",
            Stopping::HangUp => "SIGHUP",
        }
    }
}

/// The stopping signals, listened for from the moment this is made (the default of each, ending
/// the process at once, no longer applies).
pub(crate) struct Signals {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    hang_up: Option<Signal>,
}

impl Signals {
    /// Listens for SIGINT, SIGTERM and SIGHUP. A signal that cannot be listened for keeps its
    /// default.
    pub(crate) fn new() -> Self {
        Signals {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
            hang_up: signal(SignalKind::hangup()).ok(),
        }
    }

    /// The next stopping signal.
    pub(crate) async fn next(&mut self) -> Stopping {
        async fn recv(signal: &mut Option<Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = recv(&mut self.interrupt) => Stopping::Interrupt,
            () = recv(&mut self.terminate) => Stopping::Terminate,
            () = recv(&mut self.hang_up) => Stopping::HangUp,
        }
    }
}
