//! `moot work NAME`: one of any number of workers, on any machines sharing the store, working a
//! benchmark planned with `moot bench … --run NAME --detach`. See `moot_eval::work` for how
//! jobs are claimed, leased and taken over.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use moot_eval::work::WorkerOptions;
use moot_store::{Store, StoreError};

use crate::input::bad_input;
use moot_app::benchmark::WorkRequest;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark's name.
    name: String,
    /// Debates this worker runs at once.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    concurrency: usize,
    /// How long a claimed debate stays this worker's without renewal (renewed every third of
    /// it). A worker killed mid-debate holds it this long before another takes it over.
    #[arg(long, default_value = "60s", value_parser = duration)]
    lease: Duration,
    /// How often to look for work while other workers hold every debate left.
    #[arg(long, default_value = "2s", value_parser = duration)]
    poll: Duration,
    /// This worker's name in the store (default: HOST:PID). Two live workers may not share one.
    #[arg(long)]
    worker_id: Option<String>,
    /// The benchmark data folder (not needed: the plan carries its items; kept for datasets
    /// whose checks read files).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Do not answer repeated requests from the store's request cache.
    #[arg(long)]
    no_cache: bool,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    json: bool,
}

fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 60s, 2m)"))?;
    if d < Duration::from_millis(100) {
        return Err(format!("{s:?} is too short (at least 100ms)"));
    }
    Ok(d)
}

/// The lease and poll of a worker started without `--lease` / `--poll` (the flags' defaults
/// say the same), and of `moot resume` on a benchmark planned for workers.
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// `HOST:PID`: unique among the live workers of one machine, and says where a worker runs.
pub(crate) fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let record = match rt.block_on(store.bench(&args.name)) {
        Err(StoreError::BenchNotFound(name)) => {
            return bad_input(format!(
                "no benchmark named {name:?} in the store: plan one with moot bench … --run {name} --detach"
            ))
        }
        other => other?,
    };
    let worker = args.worker_id.unwrap_or_else(default_worker_id);
    if worker.trim().is_empty() {
        return bad_input("--worker-id must not be empty");
    }
    crate::bench_progress::work(
        &record,
        WorkRequest {
            worker: WorkerOptions {
                worker,
                concurrency: args.concurrency,
                lease: args.lease,
                poll: args.poll,
                progress: !args.json,
            },
            data_dir: args.data_dir,
            no_cache: args.no_cache,
        },
        args.json,
        store,
        rt,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn the_flags_defaults_are_the_constants() {
        let cli = Cli::try_parse_from(["moot-work", "b"]).unwrap();
        assert_eq!(
            (cli.args.lease, cli.args.poll),
            (DEFAULT_LEASE, DEFAULT_POLL)
        );
    }
}
