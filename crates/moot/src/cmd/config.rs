//! `moot config check FILE` and `moot config example`.

use std::path::PathBuf;

use anyhow::Result;

use moot_core::text::plural;

use moot_config::{DebateSize, EXAMPLE};

use crate::input::InputError;

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
            let c = moot_config::load(&file).map_err(InputError::from)?;
            let size = DebateSize::of(&c);
            c.validate_size(&size)
                .map_err(|e| InputError::from(e.in_file(file.display().to_string())))?;
            println!(
                "{}: ok ({}, protocol {}, {})",
                file.display(),
                plural(
                    size.agents,
                    if c.agents.is_empty() {
                        "default agent"
                    } else {
                        "agent"
                    }
                ),
                c.debate.protocol,
                plural(c.debate.rounds, "debate round")
            );
        }
        Command::Example => print!("{EXAMPLE}"),
    }
    Ok(())
}
