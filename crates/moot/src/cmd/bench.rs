//! `moot bench`: every item of a dataset under every protocol, as stored runs; rerunning with the
//! same `--name` resumes without repeating a finished debate or call. What runs is
//! `moot_app::benchmark`'s (and `moot_app::bench_fork`'s for `--fork-of`); here are its
//! progress bars on stderr and its report on stdout. `moot bench status` is [`status`].

pub mod status;

use anyhow::Result;
use moot_app::request::Settings;
use moot_config::{ProtocolName, Via};
use moot_store::Store;

use moot_app::bench_fork::{BenchChange, BenchForkRequest};
use moot_app::benchmark::BenchRequest;

use crate::flags;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(group(clap::ArgGroup::new("fork_change").args(["say", "say_wrong", "model"]).multiple(false)))]
pub struct Args {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    // The help lists moot-eval's dataset registry.
    #[arg(long, required_unless_present = "fork_of", help = moot_eval::dataset_help(), long_help = moot_eval::dataset_long_help())]
    dataset: Option<String>,
    /// Protocols to compare, comma-separated.
    #[arg(long, value_delimiter = ',', required_unless_present = "fork_of", value_parser = ProtocolName::parser())]
    protocol: Vec<ProtocolName>,
    /// Instead of a dataset, fork every debate of the stored benchmark NAME at --round, with
    /// the same intervention on every item (none: a null fork, the control). The report pairs
    /// each item with the parent's (McNemar). The same command again continues it. --config is
    /// then this machine's configuration, as for `moot fork`.
    #[arg(long, value_name = "NAME", requires = "round", conflicts_with_all = ["dataset", "protocol", "limit", "sim", "detach"])]
    fork_of: Option<String>,
    /// The round at which the fork benchmark's debates differ (with --fork-of).
    #[arg(long, requires = "fork_of")]
    round: Option<usize>,
    /// The agent the intervention changes (with --fork-of): its number (from 1) or its id.
    #[arg(long, requires = "fork_change")]
    agent: Option<String>,
    /// Put TEMPLATE in place of the agent's response of the round, with `{wrong}` (the item's
    /// defined wrong answer), `{gold}` and `{answer}` (the agent's own answer) filled in.
    #[arg(long, value_name = "TEMPLATE", requires = "agent")]
    say: Option<String>,
    /// Put the item's defined wrong answer in the agent's place: another option (choice), the
    /// opposite (yes/no), the most common wrong round-0 answer (numeric, else gold + 1; math
    /// and text, else the item is left out).
    #[arg(long, requires = "agent")]
    say_wrong: bool,
    /// Let the agent answer with MODEL from the round on (as `moot fork --model`).
    #[arg(long, value_name = "MODEL", requires = "agent")]
    model: Option<String>,
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
    /// The benchmark's name; running again with the same name resumes it (`--run` is the
    /// same).
    #[arg(long = "name", visible_alias = "run", value_name = "NAME")]
    name: Option<String>,
    #[command(flatten)]
    data_dir: flags::DataDir,
    #[command(flatten)]
    no_cache: flags::NoCache,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    strict: flags::Strict,
    /// Only record the benchmark's plan (needs --name), for `moot work NAME` processes on any
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

    /// Leave out the dataset's items that cannot be scored (a gold that does not parse under
    /// the kind, a label or index that names no option, a mapped field missing), instead of
    /// stopping at the first. The report's header counts them by reason ("12 of 2,400 items
    /// left out: gold does not parse as numeric") and its JSON lists them by id. A dataset
    /// whose every item would be left out is still an error.
    #[arg(long, conflicts_with = "fork_of")]
    skip_invalid: bool,
    #[command(flatten)]
    store: crate::flags::Store,
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
    if let Some(parent) = args.fork_of {
        let change =
            BenchChange::from_parts(args.agent, args.say, args.say_wrong, args.model, Via::Cli)?;
        // With --fork-of, --config is this machine's configuration (as for `moot fork`).
        let local = match &args.config.config {
            Some(_) => Some(args.config.load()?),
            None => None,
        };
        let request = BenchForkRequest {
            via: Via::Cli,
            parent,
            round: args.round.unwrap_or_default(),
            change,
            name: args.name,
            concurrency: args.concurrency.concurrency,
            local,
        };
        return fork_benchmark(request, args.output.json, args.strict.strict, store, rt);
    }
    let request = BenchRequest {
        settings: Settings {
            via: Via::Cli,
            config: Some(args.config.load()?),
            config_file: args.config.config,
            rounds: args.size.rounds,
            agents: args.size.agents,
            sim: args.sim,
            protocol_options: args.options_set.options_set,
            ..Settings::default()
        },
        dataset: args.dataset.unwrap_or_default(),
        protocols: args.protocol,
        limit: args.limit,
        seed: args.seed,
        concurrency: args.concurrency.concurrency,
        name: args.name,
        data_dir: args.data_dir.data_dir,
        no_cache: args.no_cache.no_cache,
        sc_at_budget: args.sc_at_budget,
        resumed: false,
        skip_invalid: args.skip_invalid,
    };
    crate::progress::bench::run_benchmark(
        request,
        args.detach,
        args.output.json,
        args.strict.strict,
        store,
        rt,
    )
}

/// Forks every debate of a stored benchmark (`moot bench --fork-of`) and prints the fork
/// benchmark's report, paired with its parent's; protocols and items left out are said on
/// stderr (and listed in the JSON).
pub fn fork_benchmark(
    request: moot_app::bench_fork::BenchForkRequest,
    json: bool,
    strict: bool,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    let mut meter = crate::progress::meter::Meter::new(
        &format!("fork of {}", request.parent),
        &[("debates".to_string(), None)],
        json,
    );
    let (mut forked, mut read) = (0usize, 0usize);
    let started = std::time::Instant::now();
    let done = rt.block_on(moot_app::bench_fork::run(
        store,
        &request,
        &mut |protocol, new| {
            if new {
                forked += 1;
            } else {
                read += 1;
            }
            if let Some(bar) = meter.bar(0) {
                bar.inc(1);
                bar.set_message(format!(
                    "{forked} forked, {read} read back · last: {protocol}"
                ));
            }
        },
        &mut |m| meter.suspend(|| errln!("{}", moot_core::escape::terminal(m))),
    ))?;
    meter.finish();
    if !json {
        errln!(
            "benchmark {}: fork of {} at round {}; {} forked, {} read back",
            done.name,
            done.parent,
            request.round,
            done.forked,
            done.read_back
        );
        for (protocol, reason) in &done.refused {
            errln!(
                "{protocol} left out: {}",
                moot_core::escape::terminal(reason)
            );
        }
        for l in &done.left_out {
            errln!(
                "{} {} left out: {}",
                l.protocol,
                l.item_id,
                moot_core::escape::terminal(&l.reason)
            );
        }
    }
    let report = rt.block_on(done.report(store, Via::Cli))?;
    if json {
        let mut value = rt.block_on(done.report_json(store, Via::Cli))?;
        value["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
        outln!("{value}");
    } else {
        out!("{}", crate::terminal::shown(&report, &report.markdown(&[])));
    }
    crate::progress::bench::tell_failed_calls(&report, strict)
}
