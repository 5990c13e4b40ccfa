//! `moot config check FILE` and `moot config example`.

use std::path::PathBuf;

use anyhow::Result;

use crate::config::{Config, EXAMPLE};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Validate a configuration file.
    Check { file: PathBuf },
    /// Print a commented example configuration.
    Example,
}

pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Check { file } => {
            let c = Config::load(&file)?;
            println!(
                "{}: ok ({} agents, protocol {}, {} debate rounds)",
                file.display(),
                c.agents.len(),
                c.debate.protocol,
                c.debate.rounds
            );
        }
        Command::Example => print!("{EXAMPLE}"),
    }
    Ok(())
}
