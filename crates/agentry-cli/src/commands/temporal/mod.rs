//! Runs on Temporal: `agentry worker` hosts the config's agents on the server of its
//! `[temporal]` table, `agentry run --temporal` starts a run there and follows it, and
//! `agentry approve|reject RUN --temporal` decides its waiting calls. An `agentry` built without
//! the `temporal` feature says so.

#[cfg(not(feature = "temporal"))]
use super::Failure;
#[cfg(not(feature = "temporal"))]
use crate::cli::{Cli, RunArgs};
#[cfg(not(feature = "temporal"))]
use crate::exit::Exit;

#[cfg(feature = "temporal")]
mod enabled;

#[cfg(feature = "temporal")]
pub(super) use enabled::{approve, reject, run, worker};

/// What an `agentry` without Temporal support answers.
#[cfg(not(feature = "temporal"))]
fn unsupported() -> Failure {
    (
        Exit::Usage,
        "this agentry was built without Temporal support: install it with `cargo install agentry-cli --features temporal`".into(),
    )
}

/// `agentry worker`.
#[cfg(not(feature = "temporal"))]
pub(super) async fn worker(_cli: &Cli) -> Result<Exit, Failure> {
    Err(unsupported())
}

/// `agentry run --temporal`.
#[cfg(not(feature = "temporal"))]
pub(super) async fn run(_cli: &Cli, _args: &RunArgs, _color: bool) -> Result<Exit, Failure> {
    Err(unsupported())
}

/// `agentry approve RUN --temporal`.
#[cfg(not(feature = "temporal"))]
pub(super) async fn approve(
    _cli: &Cli,
    _run: &str,
    _call: Option<&str>,
    _color: bool,
) -> Result<Exit, Failure> {
    Err(unsupported())
}

/// `agentry reject RUN --temporal`.
#[cfg(not(feature = "temporal"))]
pub(super) async fn reject(
    _cli: &Cli,
    _run: &str,
    _call: Option<&str>,
    _reason: &str,
    _stop: bool,
    _color: bool,
) -> Result<Exit, Failure> {
    Err(unsupported())
}
