//! `moot bench`: every item of a dataset under every protocol, as stored runs; rerunning with the
//! same `--run` name resumes without repeating a finished debate or call. `moot bench status`
//! is [`status`].

pub mod status;

use anyhow::Result;
use moot_config::ProtocolName;
use moot_store::Store;

use moot_app::benchmark::BenchRequest;

use crate::flags;

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
    #[command(flatten)]
    config: flags::ConfigFile,
    #[command(flatten)]
    options_set: flags::ProtocolOptions,
    /// How many items, drawn at random with --seed (default: all).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    limit: Option<usize>,
    /// Seed of the item draw and of every debate.
    #[arg(long, default_value_t = moot_config::DEFAULT_SEED)]
    seed: u64,
    #[command(flatten)]
    concurrency: flags::Concurrency,
    #[command(flatten)]
    size: flags::TeamSize,
    /// Simulated agents (each told the item's gold answer) instead of the configured ones.
    #[arg(long)]
    sim: bool,
    /// The benchmark's name; running again with the same name resumes it.
    #[arg(long = "run")]
    name: Option<String>,
    #[command(flatten)]
    data_dir: flags::DataDir,
    #[command(flatten)]
    no_cache: flags::NoCache,
    #[command(flatten)]
    output: flags::Json,
    /// Only record the benchmark's plan (needs --run), for `moot work NAME` processes on any
    /// machines sharing the store to work; prints the plan and exits.
    #[arg(long, requires = "name")]
    detach: bool,
    /// Then run a self-consistency arm that spends what the costliest debate protocol spent:
    /// cot-sc with as many samples as its mean tokens per item pay for (a sample's cost taken
    /// from the benchmark's cot-sc samples, else its debaters' round-0 answers, plus a tenth),
    /// as the benchmark NAME-scK on the same items and seed, and report both together (`moot
    /// report NAME NAME-scK` again). Its samples are that many agents cycling the team, each
    /// with its own seed; the team-size limits apply to them.
    #[arg(long, conflicts_with = "detach")]
    sc_at_budget: bool,
}

#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// How far a benchmark is: debates done, running, pending and failed, and each worker's
    /// rate.
    Status(status::Args),
}

/// `moot bench status NAME`'s arguments, when that is what was asked.
pub fn take_status(args: &mut Args) -> Option<status::Args> {
    args.command
        .take()
        .map(|BenchCommand::Status(status)| status)
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let config = args.config.load()?;
    let request = BenchRequest {
        dataset: args.dataset.unwrap_or_default(),
        protocols: args.protocol,
        config_file: args.config.config,
        options_set: args.options_set.options_set,
        limit: args.limit,
        seed: args.seed,
        concurrency: args.concurrency.concurrency,
        rounds: args.size.rounds,
        agents: args.size.agents,
        sim: args.sim,
        name: args.name,
        data_dir: args.data_dir.data_dir,
        no_cache: args.no_cache.no_cache,
        resumed: false,
    };
    let mode = crate::bench_progress::RunMode {
        detach: args.detach,
        json: args.output.json,
        sc_at_budget: args.sc_at_budget,
    };
    crate::bench_progress::run(request, config, mode, store, rt)
}
