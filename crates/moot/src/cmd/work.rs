//! `moot work NAME`: one of any number of workers, on any machines sharing the store, working a
//! benchmark planned with `moot bench … --name NAME --detach`. See `moot_eval::work` for how
//! jobs are claimed, leased and taken over; here are the worker's progress bar, its summary,
//! and SIGINT/SIGTERM as its signal to stop.

use std::time::Duration;

use anyhow::Result;
use moot_app::benchmark::WorkRequest;
use moot_app::worker::default_worker_id;
use moot_eval::work::WorkerOptions;
use moot_store::{Store, StoreError};

use crate::flags;
use crate::input::bad_input;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark's name.
    name: String,
    #[command(flatten)]
    concurrency: flags::Concurrency,
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
    #[command(flatten)]
    data_dir: flags::DataDir,
    #[command(flatten)]
    no_cache: flags::NoCache,
    #[command(flatten)]
    config: flags::LocalConfig,
    #[command(flatten)]
    output: flags::Json,
    /// Serve Prometheus metrics at http://ADDR/metrics while working (anything but loopback
    /// needs --metrics-token).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// `/metrics` then needs `Authorization: Bearer TOKEN`.
    #[arg(long, env = "MOOT_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    #[command(flatten)]
    store: crate::flags::Store,
}

fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 60s, 2m)"))?;
    if d < Duration::from_millis(100) {
        return Err(format!("{s:?} is too short (at least 100ms)"));
    }
    Ok(d)
}

pub fn run(
    args: Args,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
    metrics: Option<std::sync::Arc<moot_telemetry::Metrics>>,
) -> Result<()> {
    let local = args.config.load()?;
    if let (Some(addr), Some(metrics)) = (args.metrics, metrics) {
        let options = moot_serve::ServeOptions {
            host: addr.ip(),
            port: addr.port(),
            token: args.metrics_token.clone().filter(|t| !t.is_empty()),
            ..moot_serve::ServeOptions::default()
        };
        let (bound, server) = rt
            .block_on(moot_serve::serve_metrics(metrics, options))
            .map_err(|e| match e {
                moot_serve::ServeError::Refused(m) => anyhow::Error::new(moot_app::InputError(
                    m.replace("--token", "--metrics-token"),
                )),
                other => anyhow::Error::new(other).context("moot work --metrics"),
            })?;
        errln!("moot work: metrics at http://{bound}/metrics");
        rt.spawn(async move {
            if let Err(e) = server.await {
                errln!("moot work: the metrics server stopped: {e}");
            }
        });
    }
    let record = match rt.block_on(store.bench(&args.name)) {
        Err(StoreError::BenchNotFound(name)) => {
            return bad_input(format!(
                "no benchmark named {name:?} in the store: plan one with moot bench … --name {name} --detach"
            ))
        }
        other => other?,
    };
    let worker = args.worker_id.unwrap_or_else(default_worker_id);
    if worker.trim().is_empty() {
        return bad_input("--worker-id must not be empty");
    }
    let json = args.output.json;
    crate::progress::work::work_benchmark(
        &record,
        WorkRequest {
            via: moot_config::Via::Cli,
            worker: WorkerOptions {
                worker,
                concurrency: args.concurrency.concurrency,
                lease: args.lease,
                poll: args.poll,
                progress: !json,
            },
            data_dir: args.data_dir.data_dir,
            no_cache: args.no_cache.no_cache,
            local,
        },
        json,
        store,
        rt,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use moot_app::worker::{DEFAULT_LEASE, DEFAULT_POLL};

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
