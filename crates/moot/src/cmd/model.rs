//! `moot model pull [NAME]` and `moot model list`.

use anyhow::{Context, Result};
use moot_backends::models::{self, default_model, KNOWN_MODELS};

use crate::input::InputError;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Fetch a known model into the model directory and verify its sha256.
    Pull {
        /// A known model name; the default model when omitted.
        name: Option<String>,
    },
    /// List known models and whether they are present.
    List,
}

pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Pull { name } => {
            let model = match name {
                Some(n) => models::known(&n).ok_or_else(|| {
                    InputError(format!(
                        "unknown model {n:?} (known: {})",
                        KNOWN_MODELS
                            .iter()
                            .map(|m| m.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
                None => default_model(),
            };
            let path = models::ensure(model, &mut |m| eprintln!("{m}"))
                .with_context(|| format!("pulling {}", model.name))?;
            println!("{}", path.display());
        }
        Command::List => {
            for m in KNOWN_MODELS {
                let present = models::path_of(m).map(|p| p.is_file()).unwrap_or(false);
                println!(
                    "{:<20} {:>6} MB  {}  {}",
                    m.name,
                    m.size / 1_000_000,
                    if present { "present" } else { "not pulled" },
                    m.description
                );
            }
        }
    }
    Ok(())
}
