//! Running a benchmark — new or resumed — from a request and a configuration: what `bench`
//! and `resume` share.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result};
use moot_config::{Config, ProtocolName};
use moot_core::debate::AgentSpec;
use moot_core::protocol::{build_protocol, Protocol, ProtocolOptions, PROTOCOLS};
use moot_core::text::plural;
use moot_engine::EngineAgent;
use moot_eval::bench::{item_seed, run_bench, AgentSource, BenchError, BenchPlan};
use moot_eval::report::{BenchInfo, Report};
use moot_eval::{DatasetSpec, Item};
use moot_store::Store;

use crate::backends;
use crate::input::{bad_input, InputError};
use crate::prepare::{Overrides, TeamRequest};

/// What to benchmark and how: `moot bench`'s flags, or a stored benchmark's settings.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// The dataset, as `--dataset` names it.
    pub dataset: String,
    pub protocols: Vec<ProtocolName>,
    /// The configuration file, named in errors about its keys.
    pub config_file: Option<PathBuf>,
    /// `-o KEY=VALUE` protocol options.
    pub options_set: Vec<String>,
    /// How many items, drawn at random with `seed` (default: all).
    pub limit: Option<usize>,
    pub seed: u64,
    /// Debates in flight at once.
    pub concurrency: usize,
    pub rounds: Option<usize>,
    pub agents: Option<usize>,
    pub sim: bool,
    /// The benchmark's name; the same name resumes it.
    pub name: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub no_cache: bool,
    pub json: bool,
    /// Continuing a stored benchmark: its size was checked when it started (perhaps under older
    /// limits) and is not checked again.
    pub resumed: bool,
}

impl BenchRequest {
    /// The request that continues the stored benchmark `record`: its dataset, protocols, limit
    /// and seed; its configuration is passed to [`run`] apart. The rest are how to run, not
    /// what: they may differ from the first run's.
    pub fn resuming(
        record: &moot_store::BenchRecord,
        concurrency: usize,
        data_dir: Option<PathBuf>,
        no_cache: bool,
        json: bool,
    ) -> Result<BenchRequest, InputError> {
        let protocols = record
            .protocols
            .iter()
            .map(|p| {
                p.parse::<ProtocolName>()
                    .map_err(|e| InputError(format!("benchmark {}: protocol {e}", record.name)))
            })
            .collect::<Result<_, _>>()?;
        Ok(BenchRequest {
            dataset: record.dataset.clone(),
            protocols,
            config_file: None,
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
        })
    }
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

/// Runs (or resumes) the benchmark `args` describe with `config` (a file's, or a stored
/// benchmark's, whose agents are already sized).
pub fn run(
    args: BenchRequest,
    mut config: Config,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    Overrides {
        rounds: args.rounds,
        options: args.options_set.clone(),
        ..Overrides::default()
    }
    .apply(&mut config)?;
    let names: Vec<&str> = args.protocols.iter().map(ProtocolName::as_str).collect();
    let options = ProtocolsOptions::check(&config, &names)?;
    let team = TeamRequest {
        agents: args.agents,
        rounds_flag: args.rounds.is_some(),
        sim: args.sim,
    };
    if !args.resumed {
        let size = team.size(&config, args.config_file.as_deref());
        config
            .validate_size_for(&size, &names)
            .map_err(InputError::from)?;
    }
    let redactor = team.assemble(&mut config)?;
    let (dataset_name, items) = load_items(&args)?;
    let agents = Agents::for_items(&config, args.seed, &items)?;
    let (rule, decision) = config.decision().map_err(InputError::from)?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("bench-{}", moot_engine::new_run_id()));
    let factory = move |p: &str, item: &Item| options.build(p, item);
    let plan = BenchPlan {
        name: name.clone(),
        dataset: dataset_name.clone(),
        items: items.clone(),
        protocols: names.iter().map(|p| p.to_string()).collect(),
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
        sandbox: rt.block_on(crate::sandbox::for_code(
            &config,
            items
                .iter()
                .any(|i| i.kind == moot_core::answer::AnswerKind::Code),
        ))?,
    };
    if !args.json {
        eprintln!(
            "benchmark {name}: {} of {dataset_name} × {}",
            plural(items.len(), "item"),
            names.join(", ")
        );
    }
    let started = Instant::now();
    let mut progress = BenchProgress::new(&plan.protocols, items.len(), args.json);
    let results = rt
        .block_on(run_bench(&plan, store, &agents, |r| {
            let correct = items
                .iter()
                .find(|item| item.id == r.item_id)
                .is_some_and(|item| r.correct(item));
            progress.finished(&r.protocol, correct, r.result.usage().output_tokens);
        }))
        .map_err(|e| match e {
            BenchError::Config(m) => anyhow::Error::new(InputError(m)),
            other => anyhow::Error::new(other),
        })?;
    progress.clear();
    let info = BenchInfo {
        name,
        dataset: dataset_name,
        seed: args.seed,
        limit: args.limit.map(|l| l as u64),
        protocols: plan.protocols.clone(),
        items: items.len(),
        unfinished: 0,
    };
    print_report(
        &Report::new(vec![info], &results, &items),
        args.json,
        started,
    )
}

/// The benchmark's report as JSON, or as Markdown tables with the wall time.
fn print_report(report: &Report, json: bool, started: Instant) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string(report).context("serialising the report")?
        );
    } else {
        print!("{}", report.markdown(&[]));
        println!("\nwall {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The protocols of a benchmark with the options each reads: one configuration serves every
/// protocol, each reads the options it knows, and an option none of them reads is refused.
struct ProtocolsOptions {
    options: ProtocolOptions,
}

impl ProtocolsOptions {
    fn check(config: &Config, protocols: &[&str]) -> Result<ProtocolsOptions, InputError> {
        let options = config.protocol_options();
        let readers: Vec<&[&str]> = protocols
            .iter()
            .filter_map(|p| PROTOCOLS.iter().find(|e| e.name == *p).map(|e| e.options))
            .collect();
        for option in options.set_names() {
            if option != "gold" && !readers.iter().any(|r| r.contains(&option)) {
                return Err(InputError(format!(
                    "option `{option}` is read by none of the protocols {}",
                    protocols.join(", ")
                )));
            }
        }
        let checked = ProtocolsOptions { options };
        for p in protocols {
            build_protocol(p, &checked.of(p))
                .map_err(|e| InputError(format!("protocol {p}: {e}")))?;
        }
        Ok(checked)
    }

    /// The options protocol `name` reads.
    fn of(&self, name: &str) -> ProtocolOptions {
        let reads = PROTOCOLS
            .iter()
            .find(|e| e.name == name)
            .map_or(&[][..], |e| e.options);
        self.options.restricted_to(reads)
    }

    /// Protocol `name` for `item`: protocols that read a gold answer (the analysis-only
    /// orderings) get the item's.
    fn build(&self, name: &str, item: &Item) -> Result<Box<dyn Protocol>, BenchError> {
        let mut options = self.of(name);
        let reads_gold = PROTOCOLS
            .iter()
            .any(|e| e.name == name && e.options.contains(&"gold"));
        if options.gold.is_none() && reads_gold && options.ordering.is_some() {
            options.gold = Some(item.gold.clone());
        }
        build_protocol(name, &options).map_err(|e| BenchError::Config(e.to_string()))
    }
}

/// The dataset's name and the items drawn from it.
fn load_items(args: &BenchRequest) -> Result<(String, Vec<Item>)> {
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
    Ok((dataset.name, items))
}

impl Agents {
    /// The team of `config`: simulated agents are built per item (each told its gold answer);
    /// the others once, checked as `ask` checks them.
    fn for_items(config: &Config, seed: u64, items: &[Item]) -> Result<Agents> {
        let all_sim = config.agents.iter().all(|a| a.is_sim());
        if !all_sim && config.agents.iter().any(|a| a.is_sim()) {
            return bad_input("a benchmark runs either all simulated agents or none");
        }
        if all_sim {
            return Ok(Agents::Sim {
                config: Box::new(config.clone()),
                seed,
            });
        }
        config.validate_settings().map_err(InputError::from)?;
        let kind = items
            .first()
            .map_or(moot_core::answer::AnswerKind::Text, |i| i.kind);
        let built = backends::build(config, kind, &mut |m| eprintln!("{m}"))?;
        Ok(Agents::Fixed {
            specs: built.specs,
            engine: built.engine,
        })
    }
}

/// One progress bar per protocol, with its running accuracy and output tokens.
struct BenchProgress {
    protocols: Vec<String>,
    bars: Vec<indicatif::ProgressBar>,
    /// Per protocol: debates finished, correct, output tokens.
    tally: Vec<(usize, usize, u64)>,
    _multi: indicatif::MultiProgress,
}

impl BenchProgress {
    fn new(protocols: &[String], items: usize, hidden: bool) -> BenchProgress {
        let multi = indicatif::MultiProgress::with_draw_target(if hidden {
            indicatif::ProgressDrawTarget::hidden()
        } else {
            indicatif::ProgressDrawTarget::stderr()
        });
        let style =
            indicatif::ProgressStyle::with_template("{prefix:>14} {bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        let bars = protocols
            .iter()
            .map(|p| {
                let bar = multi.add(indicatif::ProgressBar::new(items as u64));
                bar.set_style(style.clone());
                bar.set_prefix(p.clone());
                bar
            })
            .collect();
        BenchProgress {
            protocols: protocols.to_vec(),
            bars,
            tally: vec![(0, 0, 0); protocols.len()],
            _multi: multi,
        }
    }

    fn finished(&mut self, protocol: &str, correct: bool, output_tokens: u64) {
        let Some(i) = self.protocols.iter().position(|p| p == protocol) else {
            return;
        };
        let t = &mut self.tally[i];
        t.0 += 1;
        t.1 += usize::from(correct);
        t.2 += output_tokens;
        self.bars[i].inc(1);
        self.bars[i].set_message(format!("accuracy {}/{} · {} output tokens", t.1, t.0, t.2));
    }

    fn clear(&self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
    }
}
