//! `moot`: the multi-agent debate engine's command-line interface. One module per subcommand.

mod cmd;
mod input;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "moot",
    version,
    about = "Multi-agent debate engine",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Extract the final answer from one response read on stdin.
    Extract(cmd::extract::Args),
    /// Decide a debate trajectory under one decision rule or all of them.
    Decide(cmd::decide::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return input::clap_exit(e),
    };
    let result = match cli.command {
        Command::Extract(args) => cmd::extract::run(args),
        Command::Decide(args) => cmd::decide::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => input::report(&e),
    }
}
