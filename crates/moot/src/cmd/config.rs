//! `moot config check FILE`, `moot config convert FILE` and `moot config example`.

use std::path::PathBuf;

use anyhow::Result;

use moot_core::text::plural;

use moot_config::{DebateSize, EXAMPLE};

use crate::input::InputError;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Validate a configuration file.
    Check {
        /// The configuration (moot's TOML, or freemad's YAML or JSON).
        file: PathBuf,
    },
    /// Print a commented example configuration.
    Example,
    /// Print a configuration (moot's, or freemad's YAML/JSON) as moot's TOML, with a comment on
    /// everything whose meaning changed.
    Convert {
        /// The configuration to convert (moot's TOML, or freemad's YAML or JSON).
        file: PathBuf,
    },
}

pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Check { file } => {
            let c = moot_config::load(&file).map_err(InputError::from)?;
            let size = DebateSize::of(&c);
            c.validate_size(&size)
                .map_err(|e| InputError::from(e.in_file(file.display().to_string())))?;
            outln!(
                "{}: ok ({}{}, protocol {}, {})",
                file.display(),
                plural(
                    size.agents,
                    if c.agents.is_empty() {
                        "default agent"
                    } else {
                        "agent"
                    }
                ),
                c.deciders_suffix(),
                c.debate.protocol,
                plural(c.debate.rounds, "debate round")
            );
        }
        Command::Example => out!("{EXAMPLE}"),
        Command::Convert { file } => out!("{}", convert(&file)?),
    }
    Ok(())
}

/// `file`'s name for a TOML comment: on one line whatever it holds (a name with a newline
/// would otherwise start a line of TOML of its own).
fn commented(file: &std::path::Path) -> String {
    moot_core::escape::one_line(&file.display().to_string()).into_owned()
}

/// The TOML of the configuration in `file`, headed by where it came from and, for a freemad
/// file, by each place where moot reads it differently.
fn convert(file: &std::path::Path) -> Result<String> {
    let (config, dialect) = moot_config::load_with_dialect(file).map_err(InputError::from)?;
    let mut out = String::new();
    match dialect {
        moot_config::Dialect::Moot => {
            out.push_str(&format!(
                "# {}: moot's own format, rewritten in full\n",
                commented(file)
            ));
        }
        moot_config::Dialect::Freemad(notes) => {
            out.push_str(&format!(
                "# Converted from the freemad configuration {}.\n",
                commented(file)
            ));
            out.push_str("# Where moot reads it differently:\n");
            for note in notes {
                out.push_str(&format!(
                    "# - {}: {}\n",
                    moot_core::escape::one_line(&note.key),
                    moot_core::escape::one_line(&note.message)
                ));
            }
        }
    }
    out.push('\n');
    let toml = toml::to_string(&config)
        .map_err(|e| anyhow::anyhow!("writing the configuration as TOML: {e}"))?;
    out.push_str(&toml);
    Ok(out)
}
