//! Flags that several commands take, each declared once — one name, one help text, one
//! validation — and flattened into each command's arguments (`#[command(flatten)]`).

use std::path::PathBuf;

/// `--json`.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Json {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--store`, on the commands that read or write a store (and only on those).
#[derive(Debug, Clone, clap::Args)]
pub struct Store {
    /// Where runs are stored: a SQLite file path or sqlite:// URL, or a postgres:// URL
    /// (default: MOOT_STORE, else moot.db in the user's data directory).
    // Given twice, the last one is used (and both are hidden from /proc/PID/cmdline).
    #[arg(long, env = "MOOT_STORE", overrides_with = "store")]
    // Read from clap's matches in `main`, at whatever depth of subcommands it was given.
    #[allow(dead_code)]
    pub store: Option<String>,
}

/// `--strict`.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Strict {
    /// Exit 1 when any agent's call failed (after its retries), even though the debate still
    /// decided; each failure is said on standard error either way.
    #[arg(long)]
    pub strict: bool,
}

/// `--config FILE`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigFile {
    /// Configuration file (TOML, YAML or JSON; moot's or freemad's): agents, protocol, deadlines
    /// and settings, with [protocol] options applied where a protocol reads them.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl ConfigFile {
    /// The configuration in the file, checked, or the defaults without one.
    pub fn load(&self) -> Result<moot_config::Config, moot_app::InputError> {
        moot_app::prepare::load_config(self.config.as_deref())
    }
}

/// `--config FILE` of the commands that work from a stored configuration (`resume`, `fork`,
/// `regrade`, `work`): this machine's configuration, which a store's never replaces (see
/// `moot_app::stored`).
#[derive(Debug, Clone, clap::Args)]
pub struct LocalConfig {
    /// This machine's configuration file (as for `moot ask`): what agents may run
    /// ([security]), where requests go and with which key (its agents' base_url and
    /// api_key_env), the sandbox's and debates' limits, and agents that take the place of the
    /// stored agents of the same id. A stored configuration supplies the debate, never these;
    /// without this flag, the defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl LocalConfig {
    /// The configuration in the file, checked, or the defaults without one.
    pub fn load(&self) -> Result<moot_config::Config, moot_app::InputError> {
        moot_app::prepare::load_config(self.config.as_deref())
    }

    /// The configuration in the file, checked, if one is given.
    pub fn given(&self) -> Result<Option<moot_config::Config>, moot_app::InputError> {
        self.config
            .as_deref()
            .map(|path| moot_app::prepare::load_config(Some(path)))
            .transpose()
    }
}

/// `--concurrency N` of the commands that run a benchmark's debates.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Concurrency {
    /// Debates in flight at once.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    pub concurrency: usize,
}

/// `--data-dir DIR`.
#[derive(Debug, Clone, clap::Args)]
pub struct DataDir {
    /// The benchmark data folder (default: MOOT_DATA_DIR, else ../shared/data). Datasets that
    /// ship with moot (humaneval) need none, nor does working a planned benchmark (its plan
    /// carries the items).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// `--no-cache`.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct NoCache {
    /// Do not answer repeated requests from the store's request cache (on by default: rerunning a
    /// benchmark's requests under another name costs nothing, and hits are reported apart).
    #[arg(long)]
    pub no_cache: bool,
}

/// `--agents N` and `--rounds N`: the size of each debate.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct TeamSize {
    /// Number of agents (overrides the config; at most 16 unless the config's token budget pays
    /// for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    pub agents: Option<usize>,
    /// Debate rounds after round 0 (overrides the config; at most 10 unless the config's token
    /// budget pays for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::count)]
    pub rounds: Option<usize>,
}

/// `-o KEY=VALUE`, repeatable.
#[derive(Debug, Clone, clap::Args)]
pub struct ProtocolOptions {
    /// A protocol option, as in the config's [protocol] table: `masking=objective`,
    /// `topology=ring`, `faults.cut_off=0.5` (repeatable).
    #[arg(long = "option", short = 'o', value_name = "KEY=VALUE")]
    pub options_set: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        concurrency: Concurrency,
        #[command(flatten)]
        size: TeamSize,
    }

    #[test]
    fn concurrency_defaults_to_four_and_refuses_zero() {
        let cli = Cli::try_parse_from(["moot"]).unwrap();
        assert_eq!(cli.concurrency.concurrency, 4);
        let e = Cli::try_parse_from(["moot", "--concurrency", "0"])
            .err()
            .expect("refused");
        assert!(e.to_string().contains("must be at least 1"), "{e}");
    }
}
