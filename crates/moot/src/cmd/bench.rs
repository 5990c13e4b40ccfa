//! `moot bench`: every item of a dataset under every protocol, as stored runs; rerunning with the
//! same `--run` name resumes without repeating a finished debate or call.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result};
use moot_core::debate::AgentSpec;
use moot_core::protocol::{build_protocol, Protocol, ProtocolOptions, PROTOCOLS};
use moot_core::text::plural;
use moot_engine::EngineAgent;
use moot_eval::bench::{item_seed, run_bench, AgentSource, BenchError, BenchPlan};
use moot_eval::report::{BenchInfo, Report};
use moot_eval::{DatasetSpec, Item};
use moot_store::Store;

use crate::backends;
use crate::config::{Config, DebateSize};
use crate::input::{bad_input, InputError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The dataset: gsm8k, math500, math, aime2024, aime2025, mmlu[:SUBJECT], mmlu-pro[:logical_fallacies],
    /// bbh[:TASK], strategyqa, gsm-ranges:LEVEL, or jsonl:PATH?kind=K&question=F&answer=F / csv:PATH?…
    #[arg(long)]
    dataset: String,
    /// Protocols to compare, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    protocol: Vec<String>,
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
    #[arg(long, default_value_t = 41)]
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
    /// Continuing a stored benchmark: its size was checked when it started (perhaps under older
    /// limits) and is not checked again.
    #[arg(skip)]
    resumed: bool,
}

/// The configured agents, built once, or simulated ones built per item (each told the item's
/// gold answer, with seeds drawn from the item).
enum Agents {
    Fixed {
        specs: Vec<AgentSpec>,
        engine: Vec<EngineAgent>,
    },
    Sim {
        config: Box<Config>,
        seed: u64,
    },
}

impl AgentSource for Agents {
    fn agents(&self, item: &Item) -> Result<(Vec<AgentSpec>, Vec<EngineAgent>), BenchError> {
        match self {
            Agents::Fixed { specs, engine } => Ok((specs.clone(), engine.clone())),
            Agents::Sim { config, seed } => {
                let mut config = Config::clone(config);
                config.debate.gold = Some(item.gold.clone());
                config.debate.seed = item_seed(*seed, &item.id);
                let built = backends::build(&config, item.kind, &mut |_| {})
                    .map_err(|e| BenchError::Config(format!("{e:#}")))?;
                Ok((built.specs, built.engine))
            }
        }
    }
}

impl Args {
    /// The arguments that continue the stored benchmark `record`: its dataset, protocols,
    /// limit and seed; its configuration is passed to [`run_with`] apart. The rest are how to
    /// run, not what: they may differ from the first run's.
    pub fn resuming(
        record: &moot_store::BenchRecord,
        concurrency: usize,
        data_dir: Option<PathBuf>,
        no_cache: bool,
        json: bool,
    ) -> Args {
        Args {
            dataset: record.dataset.clone(),
            protocol: record.protocols.clone(),
            config: None,
            options_set: Vec::new(),
            limit: record.limit.map(|l| l as usize),
            seed: record.seed,
            concurrency,
            rounds: None,
            agents: None,
            sim: false,
            name: Some(record.name.clone()),
            data_dir,
            no_cache,
            json,
            resumed: true,
        }
    }
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    run_with(args, config, store, rt)
}

/// Runs (or resumes) the benchmark `args` describe with `config` (a file's, or a stored
/// benchmark's, whose agents are already sized).
pub fn run_with(
    args: Args,
    mut config: Config,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    if let Some(r) = args.rounds {
        config.debate.rounds = r;
    }
    for assignment in &args.options_set {
        crate::cmd::ask::set_protocol_option(&mut config, assignment).map_err(InputError)?;
    }
    for p in &args.protocol {
        if !PROTOCOLS.iter().any(|e| e.name == p) {
            return bad_input(format!(
                "--protocol {p:?} is not a protocol (expected one of {})",
                moot_core::protocol::protocol_names().join(", ")
            ));
        }
    }
    // One configuration serves every protocol: each reads the options it knows, and an option
    // none of them reads is refused.
    let options = config.protocol_options();
    let readers: Vec<&[&str]> = args
        .protocol
        .iter()
        .filter_map(|p| PROTOCOLS.iter().find(|e| e.name == p).map(|e| e.options))
        .collect();
    for option in options.set_names() {
        if option != "gold" && !readers.iter().any(|r| r.contains(&option)) {
            return bad_input(format!(
                "option `{option}` is read by none of the protocols {}",
                args.protocol.join(", ")
            ));
        }
    }
    let protocol_options = |name: &str| -> ProtocolOptions {
        let reads = PROTOCOLS
            .iter()
            .find(|e| e.name == name)
            .map_or(&[][..], |e| e.options);
        options.restricted_to(reads)
    };
    let reads = |p: &str, option: &str| {
        PROTOCOLS
            .iter()
            .any(|e| e.name == p && e.options.contains(&option))
    };
    for p in &args.protocol {
        build_protocol(p, &protocol_options(p))
            .map_err(|e| InputError(format!("protocol {p}: {e}")))?;
    }
    let count = args.agents.unwrap_or(DebateSize::of(&config).agents);
    if count == 0 {
        return bad_input("--agents must be at least 1");
    }
    if !args.resumed {
        let size = DebateSize {
            agents: count,
            rounds: config.debate.rounds,
            agents_flag: args.agents.is_some(),
            rounds_flag: args.rounds.is_some(),
            file: args.config.as_ref().map(|p| p.display().to_string()),
        };
        let protocols: Vec<&str> = args.protocol.iter().map(String::as_str).collect();
        config
            .validate_size_for(&size, &protocols)
            .map_err(InputError)?;
    }
    // Secrets are what the configured agents hold, even when simulated agents replace them: a
    // key pasted into a question must not reach the store because --sim was given.
    let redactor = std::sync::Arc::new(config.redactor()?);
    config.agents = if args.sim {
        backends::sim_agents(count)
    } else if config.agents.is_empty() {
        backends::default_agents(count)
    } else {
        backends::resize(&config.agents, count)
    };
    let spec =
        DatasetSpec::from_str(&args.dataset).map_err(|e| InputError(format!("--dataset: {e}")))?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(moot_eval::default_data_dir);
    let dataset = moot_eval::load(&spec, &data_dir).map_err(|e| InputError(e.to_string()))?;
    let items = moot_eval::subsample(&dataset.items, args.limit, args.seed);
    if items.is_empty() {
        return bad_input(format!("dataset {} has no items", dataset.name));
    }
    let all_sim = config.agents.iter().all(|a| a.backend == "sim");
    let any_sim = config.agents.iter().any(|a| a.backend == "sim");
    if any_sim && !all_sim {
        return bad_input("a benchmark runs either all simulated agents or none");
    }
    if !all_sim {
        // Only simulated agents need (and get) each item's gold; check the rest as `ask` does.
        config.validate_settings().map_err(InputError)?;
    }
    let agents = if all_sim {
        Agents::Sim {
            config: Box::new(config.clone()),
            seed: args.seed,
        }
    } else {
        let built = backends::build(&config, items[0].kind, &mut |m| eprintln!("{m}"))?;
        Agents::Fixed {
            specs: built.specs,
            engine: built.engine,
        }
    };
    let (rule, decision) = config.decision()?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("bench-{}", moot_engine::new_run_id()));
    // Protocols that read a gold answer (the analysis-only orderings) get each item's.
    let factory = move |p: &str, item: &Item| -> Result<Box<dyn Protocol>, BenchError> {
        let mut options = protocol_options(p);
        if options.gold.is_none() && reads(p, "gold") && options.ordering.is_some() {
            options.gold = Some(item.gold.clone());
        }
        build_protocol(p, &options).map_err(|e| BenchError::Config(e.to_string()))
    };
    let plan = BenchPlan {
        name: name.clone(),
        dataset: dataset.name.clone(),
        items: items.clone(),
        protocols: args.protocol.clone(),
        limit: args.limit.map(|l| l as u64),
        seed: args.seed,
        rounds: config.debate.rounds,
        concurrency: args.concurrency,
        engine: moot_engine::EngineConfig {
            cache: !args.no_cache,
            ..config.engine()
        },
        decision,
        rule,
        config: serde_json::to_value(&config).context("serialising the configuration")?,
        redactor,
        protocol: &factory,
    };
    let bars = indicatif::MultiProgress::with_draw_target(if args.json {
        indicatif::ProgressDrawTarget::hidden()
    } else {
        indicatif::ProgressDrawTarget::stderr()
    });
    let style = indicatif::ProgressStyle::with_template("{prefix:>14} {bar:30} {pos}/{len} {msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    let progress: Vec<indicatif::ProgressBar> = args
        .protocol
        .iter()
        .map(|p| {
            let bar = bars.add(indicatif::ProgressBar::new(items.len() as u64));
            bar.set_style(style.clone());
            bar.set_prefix(p.clone());
            bar
        })
        .collect();
    let mut tally = vec![(0usize, 0usize, 0u64); args.protocol.len()];
    if !args.json {
        eprintln!(
            "benchmark {name}: {} of {} × {}",
            plural(items.len(), "item"),
            dataset.name,
            args.protocol.join(", ")
        );
    }
    let started = Instant::now();
    let results = rt
        .block_on(run_bench(&plan, store, &agents, |r| {
            let Some(i) = args.protocol.iter().position(|p| *p == r.protocol) else {
                return;
            };
            let correct = items
                .iter()
                .find(|item| item.id == r.item_id)
                .is_some_and(|item| r.correct(item));
            let t = &mut tally[i];
            t.0 += 1;
            t.1 += usize::from(correct);
            t.2 += r.result.usage().output_tokens;
            progress[i].inc(1);
            progress[i].set_message(format!("accuracy {}/{} · {} output tokens", t.1, t.0, t.2));
        }))
        .map_err(|e| match e {
            BenchError::Config(m) => anyhow::Error::new(InputError(m)),
            other => anyhow::Error::new(other),
        })?;
    for bar in &progress {
        bar.finish_and_clear();
    }
    let report = Report::new(
        vec![BenchInfo {
            name: name.clone(),
            dataset: dataset.name.clone(),
            seed: args.seed,
            limit: args.limit.map(|l| l as u64),
            protocols: args.protocol.clone(),
            items: items.len(),
            unfinished: 0,
        }],
        &results,
        &items,
    );
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).context("serialising the report")?
        );
    } else {
        print!("{}", report.markdown(&[]));
        println!("\nwall {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}
