//! Benchmarks — new, resumed, or worked by one of many workers — from a request and a
//! configuration: what `moot bench`, `moot resume`, `moot work` and Python share. Progress
//! is reported through callbacks; printing is the front end's.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result};
use moot_config::{Config, Field, ProtocolName, Via};
use moot_core::debate::AgentSpec;
use moot_core::protocol::{build_protocol, Protocol, ProtocolOptions, PROTOCOLS};
use moot_engine::EngineAgent;
use moot_eval::bench::{
    item_seed, plan_bench, run_bench, AgentSource, BenchError, BenchPlan, ItemResult,
    ProtocolFactory,
};
use moot_eval::controls::{samples_for_budget, SamplesForBudget};
use moot_eval::report::{BenchInfo, Report};
use moot_eval::work::{WorkSummary, WorkerOptions};
use moot_eval::{DatasetSpec, Item};
use moot_store::{JobCounts, Store};

use crate::agents;
use crate::error::{bad_input, InputError};
use crate::request::Settings;

/// What to benchmark and how: `moot bench`'s flags, Python's `moot.bench(…)`, or a stored
/// benchmark's settings.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// The configuration and what the request sets over it (rounds, agents, simulated agents,
    /// protocol options), and who asked. Its `protocol` is unused: a benchmark names
    /// `protocols`.
    pub settings: Settings,
    /// The dataset, as `--dataset` names it.
    pub dataset: String,
    pub protocols: Vec<ProtocolName>,
    /// How many items, drawn at random with `seed` (default: all).
    pub limit: Option<usize>,
    pub seed: u64,
    /// Debates in flight at once.
    pub concurrency: usize,
    /// The benchmark's name; the same name resumes it.
    pub name: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub no_cache: bool,
    /// Then run a self-consistency arm that pays for the costliest debate (see [`sc_arm`]).
    pub sc_at_budget: bool,
    /// Continuing a stored benchmark: its size was checked when it started (perhaps under older
    /// limits) and is not checked again.
    pub resumed: bool,
    /// Leave out the dataset's items that cannot be scored, counted in the report, instead of
    /// refusing the dataset at the first.
    pub skip_invalid: bool,
}

impl BenchRequest {
    /// What a front end's parser may not have refused: no protocol, no debate in flight, no
    /// item or no agent asked for.
    fn check(&self) -> Result<(), InputError> {
        let via = self.settings.via;
        if self.protocols.is_empty() {
            return Err(InputError(format!(
                "{}: name at least one protocol",
                via.name(Field::Protocol)
            )));
        }
        for (field, value) in [
            (Field::Concurrency, Some(self.concurrency)),
            (Field::Limit, self.limit),
            (Field::Agents, self.settings.agents),
        ] {
            if value == Some(0) {
                return Err(InputError(format!(
                    "{} must be at least 1",
                    via.name(field)
                )));
            }
        }
        Ok(())
    }

    /// The request that continues the stored benchmark `record`, with `config` (its stored
    /// configuration, admitted on this machine): its dataset, protocols, limit and seed. The
    /// rest are how to run, not what: they may differ from the first run's.
    pub fn resuming(
        record: &moot_store::BenchRecord,
        via: Via,
        config: Config,
        concurrency: usize,
        data_dir: Option<PathBuf>,
        no_cache: bool,
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
            settings: Settings {
                config: Some(config),
                ..Settings::from(via)
            },
            dataset: record.dataset.clone(),
            protocols,
            limit: record.limit.map(|l| l as usize),
            seed: record.seed,
            concurrency,
            name: Some(record.name.clone()),
            data_dir,
            no_cache,
            sc_at_budget: false,
            resumed: true,
            // A dataset that needed it when the benchmark started needs it again.
            skip_invalid: record.left_out.is_some(),
        })
    }
}

/// The configured agents, built once, or simulated ones built per item (each told the item's
/// gold answer, with seeds drawn from the item).
enum ItemAgents {
    Fixed {
        specs: Vec<AgentSpec>,
        engine: Vec<EngineAgent>,
    },
    Sim {
        config: Box<Config>,
        seed: u64,
    },
}

impl AgentSource for ItemAgents {
    fn agents(&self, item: &Item) -> Result<(Vec<AgentSpec>, Vec<EngineAgent>), BenchError> {
        match self {
            ItemAgents::Fixed { specs, engine } => Ok((specs.clone(), engine.clone())),
            ItemAgents::Sim { config, seed } => {
                let mut config = Config::clone(config);
                config.debate.gold = Some(item.gold.clone());
                config.debate.seed = item_seed(*seed, &item.id);
                let built = agents::build(&config, item.kind, &mut |_| {})
                    .map_err(|e| BenchError::Config(format!("{e:#}")))?;
                Ok((built.specs, built.engine))
            }
        }
    }
}

/// What running, planning or working a benchmark needs, made once from a request and a
/// configuration (a file's, or a stored benchmark's, whose agents are already sized).
pub struct Prepared {
    pub name: String,
    pub dataset: String,
    pub items: Vec<Item>,
    /// The dataset's items left out because they cannot be scored (`--skip-invalid`).
    pub left_out: Option<moot_store::LeftOut>,
    pub protocols: Vec<String>,
    limit: Option<u64>,
    seed: u64,
    rounds: usize,
    layout: moot_core::layout::Layout,
    engine: moot_engine::EngineConfig,
    decision: moot_core::decision::DecisionConfig,
    rule: Option<&'static str>,
    config_json: serde_json::Value,
    redactor: std::sync::Arc<moot_core::redact::Redactor>,
    options: ProtocolsOptions,
    agents: ItemAgents,
    /// Runs every debate: the sandbox for code datasets, the run log of `[logging]`.
    runner: crate::runner::Runner,
}

impl Prepared {
    /// `items`: the dataset's (drawn here) unless given (a worker's jobs carry their items).
    /// `store`: where a benchmark of the same name is looked up, which a new request must ask
    /// the same as ([`crate::same_bench`]). `on_message` hears what building the agents does
    /// (fetching and loading a model).
    pub async fn new(
        args: &BenchRequest,
        items: Option<(String, Vec<Item>)>,
        store: &dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<Prepared> {
        args.check()?;
        let settings = &args.settings;
        let mut config = settings.load_config()?;
        settings.apply(&mut config)?;
        // The cache setting changes which calls reach the model: it is stored with the
        // benchmark (and so with a detached plan, which workers follow).
        if args.no_cache {
            config.cache.benchmarks = false;
        }
        let names: Vec<&str> = args.protocols.iter().map(ProtocolName::as_str).collect();
        let options = ProtocolsOptions::check(&config, &names, settings.via)?;
        let redactor = settings.sized(&mut config, (!args.resumed).then_some(&names[..]))?;
        let (dataset, items, left_out) = match items {
            Some((dataset, items)) => (dataset, items, None),
            None => {
                let drawn = load_items(args)?;
                for note in &drawn.notes {
                    on_message(&format!("{}: {note}", drawn.dataset));
                }
                if let Some(left_out) = &drawn.left_out {
                    on_message(&format!(
                        "{}: {}",
                        drawn.dataset,
                        moot_eval::report::left_out_summary(left_out)
                    ));
                }
                (drawn.dataset, drawn.items, drawn.left_out)
            }
        };
        let size = |i: &&Item| i.question.len() + i.passage.as_ref().map_or(0, String::len);
        if let Some(longest) = items.iter().max_by_key(size) {
            config
                .debate
                .check_question(&longest.question, longest.passage.as_deref())
                .map_err(|e| InputError(format!("item {}: {e}", longest.id)))?;
        }
        let protocols: Vec<String> = names.iter().map(|p| p.to_string()).collect();
        let limit = args.limit.map(|l| l as u64);
        // A resumed benchmark (and a worker's) runs the stored configuration; a new request
        // under a stored name must ask what it asked, known before any agent is built.
        if let (Some(name), false) = (&args.name, args.resumed) {
            match store.bench(name).await {
                Ok(existing) => crate::same_bench::check(
                    &existing,
                    &crate::same_bench::Asked {
                        dataset: &dataset,
                        protocols: &protocols,
                        limit,
                        seed: args.seed,
                        config: &config,
                    },
                    settings.via,
                )?,
                Err(moot_store::StoreError::BenchNotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let agents = ItemAgents::for_items(&config, args.seed, &items, on_message)?;
        let (rule, decision) = config.decision().map_err(InputError::from)?;
        let any_code = items
            .iter()
            .any(|i| i.kind == moot_core::answer::AnswerKind::Code);
        let tests_from = items.iter().any(|i| i.tests.is_some()).then(|| {
            format!(
                "the tests of {}",
                settings.via.assignment(Field::Dataset, &dataset)
            )
        });
        Ok(Prepared {
            name: args
                .name
                .clone()
                .unwrap_or_else(|| format!("bench-{}", moot_engine::new_run_id())),
            dataset,
            protocols,
            limit,
            seed: args.seed,
            rounds: config.debate.rounds,
            layout: config.debate.layout,
            engine: moot_engine::EngineConfig {
                cache: config.cache.benchmarks,
                ..config.engine()
            },
            decision,
            rule,
            config_json: serde_json::to_value(&config).context("serialising the configuration")?,
            runner: crate::runner::Runner::for_config(
                &config,
                redactor.clone(),
                any_code,
                tests_from.as_deref(),
                settings.via,
            )
            .await?,
            redactor,
            options,
            agents,
            items,
            left_out,
        })
    }

    /// The plan of this benchmark, building protocols with `factory`.
    fn plan<'a>(&'a self, factory: ProtocolFactory<'a>, concurrency: usize) -> BenchPlan<'a> {
        BenchPlan {
            name: self.name.clone(),
            dataset: self.dataset.clone(),
            items: self.items.clone(),
            left_out: self.left_out.clone(),
            protocols: self.protocols.clone(),
            limit: self.limit,
            seed: self.seed,
            rounds: self.rounds,
            layout: self.layout,
            concurrency,
            engine: self.engine,
            decision: self.decision.clone(),
            rule: self.rule,
            config: self.config_json.clone(),
            redactor: self.redactor.clone(),
            protocol: factory,
            runner: &self.runner,
        }
    }

    pub fn info(&self) -> BenchInfo {
        BenchInfo {
            name: self.name.clone(),
            dataset: self.dataset.clone(),
            seed: self.seed,
            limit: self.limit,
            protocols: self.protocols.clone(),
            items: self.items.len(),
            unfinished: 0,
            left_out: self.left_out.clone(),
        }
    }
}

/// What a front end hears while [`run`] runs a benchmark (and its self-consistency arm).
pub trait BenchEvents {
    /// A message about building agents (a model fetched or loaded).
    fn message(&mut self, _message: &str) {}
    /// `prepared` starts: the benchmark asked for, then its self-consistency arm.
    fn started(&mut self, _prepared: &Prepared) {}
    /// One debate ended, and whether its chosen answer was right.
    fn result(&mut self, _result: &ItemResult, _correct: bool) {}
    /// The benchmark that started last has run every debate.
    fn ended(&mut self) {}
    /// The self-consistency arm `need` asks for follows.
    fn arm(&mut self, _need: &SamplesForBudget) {}
}

/// A benchmark that ran (with its self-consistency arm, when asked): the report of all it ran,
/// their throughput together, and their names.
pub struct Benchmarked {
    pub report: Report,
    pub throughput: Throughput,
    pub names: Vec<String>,
}

impl Benchmarked {
    /// The report as JSON (what `moot bench --json` prints: what `moot report --format json`
    /// prints of the same benchmarks), with the throughput under `"throughput"`.
    pub fn json(&self) -> Result<serde_json::Value> {
        let mut value = serde_json::to_value(&self.report).context("serialising the report")?;
        value["throughput"] =
            serde_json::to_value(&self.throughput).context("serialising the report")?;
        Ok(value)
    }
}

/// Runs (or resumes) the benchmark `request` describes, then, with `sc_at_budget`, the
/// self-consistency arm that pays for its costliest debate ([`sc_arm`]); the report covers
/// both. What `moot bench` and Python's `moot.bench` run.
pub async fn run(
    request: &BenchRequest,
    store: &dyn Store,
    events: &mut dyn BenchEvents,
) -> Result<Benchmarked> {
    let via = request.settings.via;
    if request.sc_at_budget {
        // Known before anything runs: these two never debate.
        let debating = |p: &ProtocolName| {
            PROTOCOLS
                .iter()
                .find(|e| e.name == p.as_str())
                .is_none_or(|e| !matches!(e.name, "cot" | "cot-sc"))
        };
        if !request.protocols.iter().any(debating) {
            return bad_input(format!(
                "{} matches self-consistency to a debate's budget: add a protocol that debates (som, free-mad-n, …)",
                via.switch(Field::ScAtBudget)
            ));
        }
    }
    // The configuration is read once: the benchmark and its arm start from the same one, even
    // if its file changes while the first runs.
    let mut request = request.clone();
    if request.settings.config.is_none() {
        request.settings.config = Some(request.settings.load_config()?);
    }
    let request = &request;
    if request.sc_at_budget && !request.resumed {
        sc_arm_fits(request)?;
    }
    let prepared = Prepared::new(request, None, store, &mut |m| events.message(m)).await?;
    // `moot resume NAME` claimed it already (or was told to take it over).
    if !request.resumed {
        let force_with = format!(
            "moot resume {} --force",
            crate::shell::shell_word(&prepared.name)
        );
        crate::claim::bench_is_free(store, &prepared.name, false, &force_with).await?;
    }
    events.started(&prepared);
    let ran = prepared
        .run(store, request.concurrency, &mut |r, correct| {
            events.result(r, correct)
        })
        .await?;
    events.ended();
    if !request.sc_at_budget {
        return Ok(Benchmarked {
            report: ran.report,
            throughput: ran.throughput,
            names: vec![prepared.name],
        });
    }
    let (arm_request, need) = sc_arm(request, &prepared.name, &ran.results, &prepared.items)?;
    if let Some(samples) = arm_request.settings.agents.filter(|&s| s < need.samples) {
        events.message(&format!(
            "{}: {}'s debates cost {:.0} tokens per item, {} samples' worth; the cot-sc arm runs {samples}, the most a debate may have under the configuration's budget.max_total_tokens, and the report marks it short of the budget (set budget.max_total_tokens to at least {} for all of them)",
            via.switch(Field::ScAtBudget),
            need.protocol,
            need.budget,
            need.samples,
            need.samples as u64 * moot_config::MIN_TOKENS_PER_CALL
        ));
    }
    // What runs: the samples the arm was given.
    events.arm(&SamplesForBudget {
        samples: arm_request.settings.agents.unwrap_or(need.samples),
        ..need.clone()
    });
    let arm = Prepared::new(&arm_request, None, store, &mut |m| events.message(m))
        .await
        .with_context(|| {
            format!(
                "{}: the cot-sc arm needs {} samples (agents) to spend {}'s {:.0} tokens per item",
                via.switch(Field::ScAtBudget),
                need.samples,
                need.protocol,
                need.budget
            )
        })?;
    events.started(&arm);
    let arm_ran = arm
        .run(store, request.concurrency, &mut |r, correct| {
            events.result(r, correct)
        })
        .await?;
    events.ended();
    let names = vec![prepared.name.clone(), arm.name.clone()];
    let report = crate::bench_report::report(store, &names, false, via).await?;
    Ok(Benchmarked {
        report,
        throughput: ran.throughput.and(&arm_ran.throughput),
        names,
    })
}

/// `--sc-at-budget`, checked before any debate: the cot-sc arm will need about as many samples
/// as the costliest debate makes calls (each later-round call reads more than a sample's
/// prompt, so rarely fewer), and an arm of more samples than a debate may have agents under
/// the configuration's token budget could not run after the benchmark. Refused naming the
/// setting that allows it.
fn sc_arm_fits(request: &BenchRequest) -> Result<()> {
    let settings = &request.settings;
    let mut config = settings.load_config()?;
    settings.apply(&mut config)?;
    let size = settings.size(&config);
    let debating = request
        .protocols
        .iter()
        .filter(|p| !matches!(p.as_str(), "cot" | "cot-sc"))
        .map(ProtocolName::as_str)
        .collect::<Vec<_>>();
    let Some(protocol) = debating.first() else {
        return Ok(());
    };
    let calls = size.agents.saturating_mul(size.rounds.saturating_add(1));
    let budget = config.budget.max_total_tokens;
    let most = moot_config::DebateSize::most_agents(0, budget);
    if calls <= most {
        return Ok(());
    }
    let needed = calls as u64 * moot_config::MIN_TOKENS_PER_CALL;
    bad_input(format!(
        "{}: a debate of {} makes about {calls} calls, so the cot-sc arm needs about {calls} samples (agents), more than the {most} a debate may have {}; set budget.max_total_tokens to at least {needed} in the configuration ({}), or debate with fewer agents or rounds",
        settings.via.switch(Field::ScAtBudget),
        settings.via.assignment(Field::Protocol, protocol),
        match budget {
            Some(t) => format!("under budget.max_total_tokens = {t}"),
            None => "without budget.max_total_tokens".to_string(),
        },
        settings.via.name(Field::Config),
    ))
}

/// The self-consistency arm of `--sc-at-budget`: the benchmark that pays for the costliest
/// debate of the benchmark `name` just run (`results` on `items`, asked by `request`):
/// `cot-sc` with as many samples as [`samples_for_budget`] finds, as many agents cycling the
/// team (each its own seed: independent samples), on the same items and seed, named
/// `NAME-scK`. Its `[protocol]` options are only those of the configuration that `cot-sc`
/// reads. A benchmark without a debate round has no budget to match: an input error that says
/// so.
pub fn sc_arm(
    request: &BenchRequest,
    name: &str,
    results: &[ItemResult],
    items: &[Item],
) -> Result<(BenchRequest, SamplesForBudget)> {
    let settings = &request.settings;
    let Some(need) = samples_for_budget(results, items) else {
        return bad_input(format!(
            "{}: no protocol of benchmark {name} ran a debate round, so there is no debate budget for self-consistency to match",
            settings.via.switch(Field::ScAtBudget)
        ));
    };
    let mut config = settings.load_config()?;
    let reads = PROTOCOLS
        .iter()
        .find(|e| e.name == "cot-sc")
        .map_or(&[][..], |e| e.options);
    config.protocol = config.protocol.restricted_to(reads);
    // Checked before the benchmark ran against an estimate ([`sc_arm_fits`]); should the
    // debates have cost more, the arm runs the most samples a debate may have, and the report
    // says it is short of the budget (nothing already run is lost to a refusal).
    let samples = need.samples.min(moot_config::DebateSize::most_agents(
        0,
        config.budget.max_total_tokens,
    ));
    let arm = BenchRequest {
        settings: Settings {
            config: Some(config),
            protocol_options: Vec::new(),
            agents: Some(samples),
            ..settings.clone()
        },
        protocols: vec![ProtocolName::from_str("cot-sc").map_err(|e| InputError(e.to_string()))?],
        name: Some(format!("{name}-sc{samples}")),
        sc_at_budget: false,
        resumed: false,
        ..request.clone()
    };
    Ok((arm, need))
}

/// A benchmark error as the CLI reports it: a configuration problem is the user's to fix.
fn bench_error(e: BenchError) -> anyhow::Error {
    match e {
        BenchError::Config(m) => anyhow::Error::new(InputError(m)),
        other => anyhow::Error::new(other),
    }
}

impl Prepared {
    /// Records the plan for `moot work` instead of running it: how many debates the plan has,
    /// and how many of them are new.
    pub async fn plan_for_workers(
        &self,
        store: &dyn Store,
        concurrency: usize,
    ) -> Result<(u64, u64)> {
        let factory = |p: &str, item: &Item| self.options.build(p, item);
        let plan = self.plan(&factory, concurrency);
        plan_bench(&plan, store).await.map_err(bench_error)
    }

    /// Runs (or resumes) every debate, `concurrency` at once; `on_result` hears each as it
    /// ends, with whether its chosen answer was right.
    pub async fn run(
        &self,
        store: &dyn Store,
        concurrency: usize,
        on_result: &mut dyn FnMut(&ItemResult, bool),
    ) -> Result<Ran> {
        let factory = |p: &str, item: &Item| self.options.build(p, item);
        let plan = self.plan(&factory, concurrency);
        let started = Instant::now();
        let items = &self.items;
        let results = run_bench(&plan, store, &self.agents, |r| {
            on_result(r, r.correct_among(items));
        })
        .await
        .map_err(bench_error)?;
        let throughput = Throughput::of(&results, started.elapsed());
        let report = Report::new(vec![self.info()], &results, items);
        Ok(Ran {
            report,
            throughput,
            results,
        })
    }
}

/// A benchmark that ran: its report, how fast it ran, and each debate's result.
pub struct Ran {
    pub report: Report,
    pub throughput: Throughput,
    pub results: Vec<ItemResult>,
}

/// How `moot work` works a benchmark.
#[derive(Debug, Clone)]
pub struct WorkRequest {
    /// The front end that asked: how messages name what its user set.
    pub via: moot_config::Via,
    pub worker: WorkerOptions,
    pub data_dir: Option<PathBuf>,
    pub no_cache: bool,
    /// This machine's configuration (`--config`, else the defaults): what may run, where
    /// requests go and the limits, and agents that take the place of the plan's of the same id
    /// (see [`crate::stored`]).
    pub local: Config,
}

/// A planned benchmark made ready for one worker: its stored configuration, admitted on this
/// machine ([`crate::stored::admit`]), and the items its jobs carry.
pub struct ForWorker {
    pub prepared: Prepared,
    /// How many jobs the plan has.
    pub jobs: usize,
}

impl ForWorker {
    /// The planned benchmark `record` ready for a worker: refused when the worker's settings
    /// contradict the plan's, when nothing is planned, or when the plan's configuration is not
    /// admitted on this machine.
    pub async fn new(
        record: &moot_store::BenchRecord,
        request: &WorkRequest,
        store: &dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<ForWorker> {
        let config = crate::stored::admit(
            crate::stored::Stored::Bench(record),
            &request.local,
            crate::stored::Work::Debate,
            request.via,
            on_message,
        )?;
        // Settings that change results are the plan's: a worker may not contradict them.
        let via = request.via;
        if request.no_cache && config.cache.benchmarks {
            return bad_input(format!(
                "benchmark {} was planned with the request cache on; a worker cannot turn it off ({}) without changing its results: plan it with {} instead",
                record.name,
                via.switch(Field::NoCache),
                via.switch(Field::NoCache)
            ));
        }
        let jobs = store.bench_jobs(&record.name).await?;
        if jobs.is_empty() {
            return bad_input(format!(
                "benchmark {} has no planned jobs: plan one with {} and {}",
                record.name,
                via.assignment(Field::BenchName, &record.name),
                via.switch(Field::Detach)
            ));
        }
        // Each item once, in plan order (a job per protocol carries the same item).
        let mut items: Vec<Item> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for job in &jobs {
            if seen.insert(job.item_id.as_str()) {
                let item = serde_json::from_value(job.item.clone()).with_context(|| {
                    format!(
                        "benchmark {}: item {} is unreadable",
                        record.name, job.item_id
                    )
                })?;
                items.push(item);
            }
        }
        let args = BenchRequest::resuming(
            record,
            request.via,
            config,
            request.worker.concurrency,
            request.data_dir.clone(),
            request.no_cache,
        )?;
        let prepared = Prepared::new(
            &args,
            Some((record.dataset.clone(), items)),
            store,
            on_message,
        )
        .await?;
        // Taken last, once nothing else can refuse this worker: a refused one holds no name.
        claim_worker_name(&record.name, &request.worker, via, store).await?;
        Ok(ForWorker {
            prepared,
            jobs: jobs.len(),
        })
    }

    /// Works the benchmark until every job is done or failed, or until `stop` completes (its
    /// debates are then handed back); `on_counts` hears the benchmark's job counts as they
    /// change.
    pub async fn work(
        &self,
        store: &dyn Store,
        worker: &WorkerOptions,
        stop: impl std::future::Future<Output = ()>,
        on_counts: &mut dyn FnMut(&JobCounts),
    ) -> Result<WorkSummary> {
        let p = &self.prepared;
        let factory = |name: &str, item: &Item| p.options.build(name, item);
        let plan = p.plan(&factory, worker.concurrency);
        let summary = moot_eval::work::work(&plan, store, &p.agents, worker, stop, |_, counts| {
            on_counts(counts)
        })
        .await
        .map_err(bench_error)?;
        if summary.stopped {
            // Its debates were cancelled; no agent process of theirs may outlive the worker.
            moot_backends::cli::kill_live_agents();
        }
        Ok(summary)
    }
}

/// Takes the worker's name for the benchmark `bench`. Two live processes under one name would
/// renew each other's leases: a dead one's debates would never be taken over. The store decides
/// who has the name, in one statement, so two workers started at once under one name cannot
/// both pass.
async fn claim_worker_name(
    bench: &str,
    worker: &WorkerOptions,
    via: Via,
    store: &dyn Store,
) -> Result<()> {
    let name = &worker.worker;
    let lease_ms = i64::try_from(worker.lease.as_millis()).unwrap_or(i64::MAX);
    if store.claim_worker(bench, name, lease_ms).await? {
        return Ok(());
    }
    let now = store.job_counts(bench).await?.now_ms;
    let seen = store
        .bench_workers(bench)
        .await?
        .into_iter()
        .find(|w| &w.worker == name)
        .map_or(0, |w| (now - w.last_seen) / 1000);
    bad_input(format!(
        "worker {name:?} is already working benchmark {bench} (seen {seen} s ago): give each worker its own {}",
        via.name(Field::WorkerId)
    ))
}

/// How fast this invocation ran its debates: the engine's own speed, model time included,
/// process start-up, dataset loading and the report left out. Debates read back or resumed
/// from an earlier run are counted apart, their stored calls not at all.
#[derive(Debug, serde::Serialize)]
pub struct Throughput {
    pub debates: usize,
    pub reused_debates: usize,
    /// Calls recorded by the debates run from the start here.
    pub calls: usize,
    pub seconds: f64,
    pub calls_per_second: f64,
    pub us_per_call: f64,
}

impl Throughput {
    /// `calls` in `seconds` by `debates` run here (and `reused_debates` read back), with the
    /// rates they make.
    fn new(debates: usize, reused_debates: usize, calls: usize, seconds: f64) -> Throughput {
        Throughput {
            debates,
            reused_debates,
            calls,
            seconds,
            calls_per_second: if seconds > 0.0 {
                calls as f64 / seconds
            } else {
                0.0
            },
            us_per_call: if calls > 0 {
                seconds * 1e6 / calls as f64
            } else {
                0.0
            },
        }
    }

    /// Two runs' throughput as one (`moot bench --sc-at-budget` runs two benchmarks).
    pub fn and(&self, other: &Throughput) -> Throughput {
        Throughput::new(
            self.debates + other.debates,
            self.reused_debates + other.reused_debates,
            self.calls + other.calls,
            self.seconds + other.seconds,
        )
    }

    fn of(results: &[moot_eval::bench::ItemResult], wall: std::time::Duration) -> Throughput {
        let fresh: Vec<_> = results.iter().filter(|r| !r.reused).collect();
        let calls: usize = fresh.iter().map(|r| r.result.records.len()).sum();
        Throughput::new(
            fresh.len(),
            results.len() - fresh.len(),
            calls,
            wall.as_secs_f64(),
        )
    }
}

/// The protocols of a benchmark with the options each reads: one configuration serves every
/// protocol, each reads the options it knows, and an option none of them reads is refused.
struct ProtocolsOptions {
    options: ProtocolOptions,
}

impl ProtocolsOptions {
    fn check(
        config: &Config,
        protocols: &[&str],
        via: Via,
    ) -> Result<ProtocolsOptions, InputError> {
        let options = config.protocol_options();
        let readers: Vec<&[&str]> = protocols
            .iter()
            .filter_map(|p| PROTOCOLS.iter().find(|e| e.name == *p).map(|e| e.options))
            .collect();
        for option in options.set_names() {
            if option != "gold" && !readers.iter().any(|r| r.contains(&option)) {
                return Err(InputError(format!(
                    "{}: read by none of the protocols {}",
                    via.protocol_option(option),
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

/// A dataset's items drawn for a benchmark.
struct Drawn {
    dataset: String,
    items: Vec<Item>,
    left_out: Option<moot_store::LeftOut>,
    /// How the loader read what the dataset's mapping left open.
    notes: Vec<String>,
}

/// The dataset's name and the items drawn from it.
fn load_items(args: &BenchRequest) -> Result<Drawn> {
    let spec = DatasetSpec::from_str(&args.dataset)
        .map_err(|e| InputError(format!("{}: {e}", args.settings.name(Field::Dataset))))?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(moot_eval::default_data_dir);
    let options = moot_eval::LoadOptions {
        skip_invalid: args.skip_invalid,
    };
    let dataset = moot_eval::load_with(&spec, &data_dir, options).map_err(|e| {
        let hint = match (e.item_problem(), args.skip_invalid) {
            (Some(_), false) => format!(
                " ({} leaves such items out and counts them)",
                args.settings.via.switch(Field::SkipInvalid)
            ),
            _ => String::new(),
        };
        InputError(format!("{e}{hint}"))
    })?;
    let items = moot_eval::subsample(&dataset.items, args.limit, args.seed);
    if items.is_empty() {
        return bad_input(format!("dataset {} has no items", dataset.name));
    }
    Ok(Drawn {
        dataset: dataset.name,
        items,
        left_out: dataset.left_out,
        notes: dataset.notes,
    })
}

impl ItemAgents {
    /// The team of `config`: simulated agents are built per item (each told its gold answer);
    /// the others once, checked as `ask` checks them.
    fn for_items(
        config: &Config,
        seed: u64,
        items: &[Item],
        on_message: &mut dyn FnMut(&str),
    ) -> Result<ItemAgents> {
        let all_sim = config.agents.iter().all(|a| a.is_sim());
        if !all_sim && config.agents.iter().any(|a| a.is_sim()) {
            return bad_input("a benchmark runs either all simulated agents or none");
        }
        if all_sim {
            return Ok(ItemAgents::Sim {
                config: Box::new(config.clone()),
                seed,
            });
        }
        config.validate_settings().map_err(InputError::from)?;
        let kind = items
            .first()
            .map_or(moot_core::answer::AnswerKind::Text, |i| i.kind);
        let built = agents::build(config, kind, on_message)?;
        Ok(ItemAgents::Fixed {
            specs: built.specs,
            engine: built.engine,
        })
    }
}
