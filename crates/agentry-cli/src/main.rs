//! `agentry`: run agents from a config file, live in the terminal, with hooks, approvals and
//! run management. `agentry --help` lists the commands and exit codes.
#![warn(missing_docs, unreachable_pub)]

#[macro_use]
mod output;

mod cli;
mod commands;
mod cost;
mod crash;
mod drive;
mod exit;
mod hooks;
mod model;
mod progress;
mod project;
mod render;
mod signals;
mod telemetry;
mod tools;

use agentry_cli::config;
use clap::Parser;
use cli::{Cli, ColorChoice};
use exit::Exit;
use std::io::IsTerminal;

fn main() {
    let cli = Cli::parse();
    crash::report_panics(cli.verbose);
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    };
    let telemetry = match telemetry::Telemetry::start(&cli) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(Exit::Usage.code());
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(Exit::Failed.code());
        }
    };
    let exit = runtime.block_on(commands::run(cli, color));
    // Runs, hook processes and store connections end with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    std::process::exit(exit.code());
}
