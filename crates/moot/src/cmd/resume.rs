//! `moot resume RUN`: finish an interrupted debate, or benchmark, without repeating completed
//! calls (what is resumed, and whether it may be, is `moot_app::resume`'s).

use anyhow::Result;
use moot_app::resume::{resume, ResumeOptions, Resumption};
use moot_store::Store;

use crate::flags;
use crate::progress::debate::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id (as printed by `moot ask`) or a benchmark's name (`moot bench --name`).
    run: String,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    strict: flags::Strict,
    #[command(flatten)]
    concurrency: flags::Concurrency,
    #[command(flatten)]
    data_dir: flags::DataDir,
    #[command(flatten)]
    no_cache: flags::NoCache,
    /// Resume even if the process that ran it looks alive (stopped, or heard from recently):
    /// if it goes on, both processes ask the remaining calls, twice the cost.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    config: flags::LocalConfig,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let json = args.output.json;
    let options = ResumeOptions {
        via: moot_config::Via::Cli,
        concurrency: args.concurrency.concurrency,
        data_dir: args.data_dir.data_dir,
        no_cache: args.no_cache.no_cache,
        progress: !json,
        force: args.force,
        local: args.config.load()?,
    };
    crate::going_on::resume(&args.run);
    let notice = |m: &str| errln!("{}", moot_core::escape::terminal(m));
    match rt.block_on(resume(store, &args.run, options, &mut { notice }))? {
        Resumption::Run(run) => {
            for warning in &run.warnings {
                errln!("moot: warning: {warning}");
            }
            let done = run.calls.len();
            let run_id = run.run_id.clone();
            let progress = Progress::new(run.spec.rounds, json);
            let session = run.session(store, &mut |m| {
                progress.message(m);
                errln!("{m}");
            })?;
            if !json {
                errln!(
                    "resuming {run_id} with {}",
                    moot_core::text::plural(done, "completed call")
                );
            }
            crate::progress::debate::run_and_print(session, progress, json, args.strict.strict, rt)
        }
        Resumption::Worker { bench, request } => {
            if !json {
                errln!(
                    "resuming benchmark {} as worker {} (it was planned for moot work: debates other workers hold are left to them)",
                    bench.name, request.worker.worker
                );
            }
            crate::progress::work::work_benchmark(&bench, request, json, store, rt)
        }
        Resumption::Bench { bench, request } => {
            if !json {
                errln!("resuming benchmark {}", bench.name);
            }
            crate::progress::bench::run_benchmark(
                request,
                false,
                json,
                args.strict.strict,
                store,
                rt,
            )
        }
    }
}
