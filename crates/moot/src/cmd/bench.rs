//! `moot bench`: every item of a dataset under every protocol, as stored runs; rerunning with the
//! same `--run` name resumes without repeating a finished debate or call.

use std::path::PathBuf;

use anyhow::Result;
use moot_config::ProtocolName;
use moot_store::Store;

use moot_app::benchmark::BenchRequest;
use moot_app::prepare::load_config;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    // The help lists moot-eval's dataset registry.
    #[arg(long, required = true, help = moot_eval::dataset_help(), long_help = moot_eval::dataset_long_help())]
    dataset: Option<String>,
    /// Protocols to compare, comma-separated.
    #[arg(long, value_delimiter = ',', required = true, value_parser = ProtocolName::parser())]
    protocol: Vec<ProtocolName>,
    /// Configuration file (agents, deadlines, [protocol] options applied where a protocol reads them).
    #[arg(long)]
    config: Option<PathBuf>,
    /// A protocol option, as in `moot ask` (repeatable).
    #[arg(long = "option", short = 'o', value_name = "KEY=VALUE")]
    options_set: Vec<String>,
    /// How many items, drawn at random with --seed (default: all).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    limit: Option<usize>,
    /// Seed of the item draw and of every debate.
    #[arg(long, default_value_t = moot_config::DEFAULT_SEED)]
    seed: u64,
    /// Debates in flight at once.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    concurrency: usize,
    /// Debate rounds after round 0 (overrides the config; at most 10 unless the config's token
    /// budget pays for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::count)]
    rounds: Option<usize>,
    /// Number of agents (overrides the config; at most 16 unless the config's token budget pays
    /// for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    agents: Option<usize>,
    /// Simulated agents (each told the item's gold answer) instead of the configured ones.
    #[arg(long)]
    sim: bool,
    /// The benchmark's name; running again with the same name resumes it.
    #[arg(long = "run")]
    name: Option<String>,
    /// The benchmark data folder (default: MOOT_DATA_DIR, else ../shared/data).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Do not answer repeated requests from the store's request cache (on by default: rerunning a
    /// benchmark's requests under another name costs nothing, and hits are reported apart).
    #[arg(long)]
    no_cache: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Only record the benchmark's plan (needs --run), for `moot work NAME` processes on any
    /// machines sharing the store to work; prints the plan and exits.
    #[arg(long, requires = "name")]
    detach: bool,
}

#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// How far a benchmark is: debates done, running, pending and failed, and each worker's
    /// rate.
    Status(crate::cmd::status::Args),
}

/// `moot bench status NAME`'s arguments, when that is what was asked.
pub fn take_status(args: &mut Args) -> Option<crate::cmd::status::Args> {
    args.command
        .take()
        .map(|BenchCommand::Status(status)| status)
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let config = load_config(args.config.as_deref())?;
    let request = BenchRequest {
        dataset: args.dataset.unwrap_or_default(),
        protocols: args.protocol,
        config_file: args.config,
        options_set: args.options_set,
        limit: args.limit,
        seed: args.seed,
        concurrency: args.concurrency,
        rounds: args.rounds,
        agents: args.agents,
        sim: args.sim,
        name: args.name,
        data_dir: args.data_dir,
        no_cache: args.no_cache,
        resumed: false,
    };
    crate::bench_progress::run(request, config, args.detach, args.json, store, rt)
}
