//! `moot resume RUN`: finish an interrupted debate, or benchmark, without repeating completed
//! calls.

use anyhow::{Context, Result};
use moot_core::debate::DebateSpec;
use moot_store::{BenchRecord, RunRecord, RunStatus, Store, RUN_SILENCE_LIMIT};

use moot_config::Config;
use moot_eval::work::WorkerOptions;

use moot_app::agents;
use moot_app::benchmark::{BenchRequest, WorkRequest};
use moot_app::prepare::{run_or_bench, Named};
use moot_app::session::Session;

use crate::input::{bad_input, InputError};
use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id (as printed by `moot ask`) or a benchmark's name (`moot bench --run`).
    run: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// A benchmark: debates in flight at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// A benchmark: the data folder (default: MOOT_DATA_DIR, else ../shared/data).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// A benchmark: do not answer repeated requests from the store's request cache.
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let run = match rt.block_on(run_or_bench(store, &args.run))? {
        Named::Run(run) => run,
        Named::Bench(bench) => return resume_bench(args, &bench, store, rt),
    };
    let calls = rt.block_on(store.calls(&run.id))?;
    if run.status == RunStatus::Done {
        return bad_input(format!(
            "run {} is already finished (answer: {}); see `moot show {}`",
            run.id,
            run.answer.as_deref().unwrap_or("none"),
            run.id
        ));
    }
    if run.status == RunStatus::Running && !run.interrupted() {
        return bad_input(still_running(&run));
    }
    let config: Config = serde_json::from_value(run.config.clone())
        .with_context(|| format!("run {}: the stored configuration is unreadable", run.id))?;
    let spec: DebateSpec = serde_json::from_value(run.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", run.id))?;
    let redactor = std::sync::Arc::new(config.redactor().map_err(InputError::from)?);
    let done = calls.len();
    let progress = Progress::new(spec.rounds, args.json);
    let agents = agents::build(&config, spec.kind, &mut |m| {
        progress.message(m);
        eprintln!("{m}");
    })?;
    if !args.json {
        eprintln!(
            "resuming {} with {}",
            run.id,
            moot_core::text::plural(done, "completed call")
        );
    }
    let session = Session {
        store,
        run_id: run.id,
        config,
        spec,
        agents,
        restore: Some(calls),
        redactor,
    };
    crate::progress::run_and_print(session, progress, args.json, rt)
}

/// Continues a benchmark with the dataset, protocols, limit, seed and configuration it was
/// started with; finished debates and stored calls are not repeated.
fn resume_bench(
    args: Args,
    bench: &BenchRecord,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    let config: Config = serde_json::from_value(bench.config.clone()).with_context(|| {
        format!(
            "benchmark {}: the stored configuration is unreadable",
            bench.name
        )
    })?;
    if args.concurrency == 0 {
        return bad_input("--concurrency must be at least 1");
    }
    // A benchmark planned for workers is resumed as one more worker: its debates are claimed
    // under leases, so one a live worker holds is never run twice (nor its calls asked twice).
    if rt.block_on(store.job_counts(&bench.name))?.total() > 0 {
        let worker = super::work::default_worker_id();
        if !args.json {
            eprintln!(
                "resuming benchmark {} as worker {worker} (it was planned for moot work: debates other workers hold are left to them)",
                bench.name
            );
        }
        return crate::bench_progress::work(
            bench,
            WorkRequest {
                worker: WorkerOptions {
                    worker,
                    concurrency: args.concurrency,
                    lease: super::work::DEFAULT_LEASE,
                    poll: super::work::DEFAULT_POLL,
                    progress: !args.json,
                },
                data_dir: args.data_dir,
                no_cache: args.no_cache,
            },
            args.json,
            store,
            rt,
        );
    }
    // Run by one process: refused while that process still runs one of its debates.
    let live = rt
        .block_on(store.bench_runs(&bench.name))?
        .into_iter()
        .map(|(_, run)| run)
        .find(|run| run.status == RunStatus::Running && !run.interrupted());
    if let Some(run) = live {
        return bad_input(format!(
            "benchmark {} is still being run: {}",
            bench.name,
            still_running(&run)
        ));
    }
    if !args.json {
        eprintln!("resuming benchmark {}", bench.name);
    }
    let request = BenchRequest::resuming(bench, args.concurrency, args.data_dir, args.no_cache)?;
    crate::bench_progress::run(request, config, false, args.json, store, rt)
}

/// Why a run whose owner is alive is not resumed: a second process would ask its calls again.
fn still_running(run: &RunRecord) -> String {
    let heard = run.silent_ms.map_or(String::new(), |ms| {
        format!(", heard from {:.1} s ago", ms as f64 / 1000.0)
    });
    format!(
        "run {} is still running (process {}{heard}); resuming it now would ask its calls twice. \
         It can be resumed once that process has stopped (from another machine, after {} s \
         without a heartbeat)",
        run.id,
        run.owner.as_deref().unwrap_or("unknown"),
        RUN_SILENCE_LIMIT.as_secs()
    )
}
