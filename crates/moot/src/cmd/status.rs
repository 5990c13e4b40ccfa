//! `moot bench status NAME`: how far a benchmark is — debates done, running, pending and
//! failed — and how fast each worker goes. Works at any time, from any machine sharing the store.

use anyhow::Result;
use moot_core::text::plural;
use moot_store::{JobCounts, JobState, RunStatus, Store, StoreError, WorkerRecord};

use crate::input::bad_input;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark's name (`moot bench --run NAME`).
    name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// A worker not seen for this long is taken for stopped (killed, or cut off from the store).
const SILENT_AFTER_MS: i64 = 120_000;

/// One worker as the status shows it.
#[derive(Debug, serde::Serialize)]
struct WorkerStatus<'a> {
    #[serde(flatten)]
    record: &'a WorkerRecord,
    /// `working`, `exited`, `gone` (its process on this machine ended without exiting: killed
    /// or crashed), or `silent` (not seen for two minutes: gone, or cut off from the store).
    state: &'static str,
    seen_ms_ago: i64,
    debates_per_minute: f64,
    calls_per_second: f64,
}

fn worker_status(w: &WorkerRecord, now_ms: i64) -> WorkerStatus<'_> {
    let seconds = ((w.last_seen - w.started_at) as f64 / 1000.0).max(1e-3);
    let seen_ms_ago = (now_ms - w.last_seen).max(0);
    WorkerStatus {
        record: w,
        state: if w.exited {
            "exited"
        } else if w.gone() {
            "gone"
        } else if seen_ms_ago > SILENT_AFTER_MS {
            "silent"
        } else {
            "working"
        },
        seen_ms_ago,
        debates_per_minute: w.debates as f64 * 60.0 / seconds,
        calls_per_second: w.calls as f64 / seconds,
    }
}

/// The counts of a benchmark run by one `moot bench` (no jobs): from its linked debates.
async fn counts_from_runs(store: &dyn Store, name: &str) -> Result<JobCounts, StoreError> {
    let mut counts = JobCounts::default();
    for (_, run) in store.bench_runs(name).await? {
        match run.status {
            RunStatus::Done => counts.done += 1,
            RunStatus::Running => counts.running += 1,
            RunStatus::Failed => counts.failed += 1,
        }
    }
    Ok(counts)
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let record = match rt.block_on(store.bench(&args.name)) {
        Err(StoreError::BenchNotFound(name)) => {
            return bad_input(format!("no benchmark named {name:?} in the store"))
        }
        other => other?,
    };
    let mut counts = rt.block_on(store.job_counts(&args.name))?;
    let worked = counts.total() > 0;
    if !worked {
        let now_ms = counts.now_ms;
        counts = rt.block_on(counts_from_runs(store, &args.name))?;
        counts.now_ms = now_ms;
    }
    let mut workers = rt.block_on(store.bench_workers(&args.name))?;
    if worked {
        // The jobs say who finished what; a worker's own totals lag behind by up to a write
        // (one killed between finishing a debate and reporting it would undercount).
        let mut finished = std::collections::HashMap::new();
        for job in rt.block_on(store.bench_jobs(&args.name))? {
            if let (JobState::Done, Some(worker)) = (job.state, job.worker) {
                *finished.entry(worker).or_insert(0u64) += 1;
            }
        }
        for w in &mut workers {
            w.debates = finished.get(&w.worker).copied().unwrap_or(0);
        }
    }
    let statuses: Vec<WorkerStatus> = workers
        .iter()
        .map(|w| worker_status(w, counts.now_ms))
        .collect();
    if args.json {
        let value = serde_json::json!({
            "bench": record.name,
            "dataset": record.dataset,
            "protocols": record.protocols,
            "worked": worked,
            "counts": counts,
            "total": counts.total(),
            "workers": statuses,
        });
        outln!("{value}");
        return Ok(());
    }
    let total = counts.total().max(1);
    outln!(
        "benchmark {} ({} × {}): {}{}",
        record.name,
        record.dataset,
        record.protocols.join(", "),
        plural(counts.total() as usize, "debate"),
        if worked { " planned" } else { " started" }
    );
    let line = |what: &str, n: u64, note: &str| {
        outln!(
            "  {what:<8} {n:>6}  {:>5.1}%{note}",
            n as f64 * 100.0 / total as f64
        )
    };
    line("done", counts.done, "");
    line("running", counts.running, "");
    if worked {
        line("pending", counts.pending, "");
        if counts.expired > 0 {
            line(
                "expired",
                counts.expired,
                "  (their workers stopped; the next worker to look takes them over)",
            );
        }
    }
    line("failed", counts.failed, "");
    if statuses.is_empty() {
        if worked && !counts.settled() {
            outln!(
                "no worker has started: moot work {}",
                crate::input::shell_word(&record.name)
            );
        }
        return Ok(());
    }
    outln!(
        "\n  {:<32} {:<8} {:>8} {:>8} {:>11} {:>8} {:>10}",
        "worker",
        "state",
        "debates",
        "calls",
        "debates/min",
        "calls/s",
        "seen"
    );
    for s in &statuses {
        outln!(
            "  {:<32} {:<8} {:>8} {:>8} {:>11.1} {:>8.2} {:>8.0} s ago",
            s.record.worker,
            s.state,
            s.record.debates,
            s.record.calls,
            s.debates_per_minute,
            s.calls_per_second,
            s.seen_ms_ago as f64 / 1000.0
        );
    }
    Ok(())
}
