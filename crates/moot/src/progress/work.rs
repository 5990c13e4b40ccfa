//! A worker from the command line (`moot work`, `moot resume` of a planned benchmark): its
//! progress bar on stderr, its summary on stdout, and SIGINT/SIGTERM as its signal to stop.

use anyhow::{Context, Result};
use moot_app::benchmark::{ForWorker, WorkRequest};
use moot_core::text::plural;
use moot_store::{JobCounts, Store};

/// Works the planned benchmark `record` as one of any number of workers and prints the
/// worker's summary; a worker stopped by a signal fails, so that a scheduler starts another.
pub fn work_benchmark(
    record: &moot_store::BenchRecord,
    request: WorkRequest,
    json: bool,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    let stop = stop_signal(rt);
    let ready = rt.block_on(ForWorker::new(record, &request, store, &mut |m| {
        errln!("{}", moot_core::escape::terminal(m))
    }))?;
    let bar = WorkProgress::new(ready.jobs as u64, &request.worker.worker, json);
    let started = std::time::Instant::now();
    let summary = rt.block_on(ready.work(store, &request.worker, stop, &mut |counts| {
        bar.update(counts)
    }))?;
    bar.clear();
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let mut value = serde_json::to_value(&summary).context("serialising the summary")?;
        value["seconds"] = serde_json::json!(seconds);
        value["bench"] = serde_json::json!(record.name);
        outln!("{value}");
    } else {
        let c = summary.counts;
        outln!(
            "worker {}: {} ({} taken over from workers that stopped), {} failed, {} lost to another worker, {} in {seconds:.1} s; benchmark {}: {} done, {} failed of {}",
            summary.worker,
            plural(summary.debates as usize, "debate"),
            summary.taken_over,
            summary.failed,
            summary.lost,
            plural(summary.calls as usize, "call"),
            record.name,
            c.done,
            c.failed,
            c.total()
        );
    }
    if summary.stopped {
        // Not a success: a scheduler that restarts failed workers should start another.
        anyhow::bail!(
            "worker {} was stopped by a signal before benchmark {} was done; {} handed back for other workers to continue",
            summary.worker,
            record.name,
            plural(summary.released as usize, "debate")
        );
    }
    Ok(())
}

/// A future that completes at SIGTERM (what Kubernetes, Slurm and `kill` send to stop a
/// process) or SIGINT (Ctrl-C). The handlers are installed now, so a signal that comes before
/// the future is first polled still counts; if they cannot be, it never completes.
fn stop_signal(rt: &tokio::runtime::Runtime) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let _inside = rt.enter();
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
}

/// One bar for a worker: the benchmark's jobs done (by every worker) of all.
struct WorkProgress {
    bar: indicatif::ProgressBar,
}

impl WorkProgress {
    fn new(total: u64, worker: &str, hidden: bool) -> WorkProgress {
        let bar = if hidden {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new(total)
        };
        let style = indicatif::ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(worker.to_string());
        WorkProgress { bar }
    }

    fn update(&self, counts: &JobCounts) {
        self.bar.set_position(counts.done + counts.failed);
        self.bar.set_message(format!(
            "{} running, {} pending",
            counts.running + counts.expired,
            counts.pending
        ));
    }

    fn clear(&self) {
        self.bar.finish_and_clear();
    }
}
