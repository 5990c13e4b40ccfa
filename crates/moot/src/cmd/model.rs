//! `moot model pull [NAME]` and `moot model list`.

use anyhow::{Context, Result};
use moot_backends::models::{self, default_model, ModelCache, ModelStatus, KNOWN_MODELS};

use crate::input::InputError;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Fetch a known model into the model directory, or hash the one already there and fetch it
    /// again if it does not match its pinned sha256.
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
            let path = ModelCache::from_env()?
                .verify(model, &mut |m| errln!("{m}"))
                .with_context(|| format!("pulling {}", model.name))?;
            outln!("{}", path.display());
        }
        Command::List => {
            let cache = ModelCache::from_env()?;
            for m in KNOWN_MODELS {
                let status = match cache.status(m) {
                    ModelStatus::Verified => "verified",
                    ModelStatus::Unverified => "unverified",
                    ModelStatus::Missing => "not pulled",
                };
                outln!(
                    "{:<20} {:>6} MB  {:<10}  {}",
                    m.name,
                    m.size / 1_000_000,
                    status,
                    m.description
                );
            }
        }
    }
    Ok(())
}
