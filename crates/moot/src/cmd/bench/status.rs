//! `moot bench status NAME`: how far a benchmark is — debates done, running, pending and
//! failed — and how fast each worker goes (`moot_app::bench_status`). Works at any time, from
//! any machine sharing the store.

use anyhow::Result;
use moot_app::bench_status::BenchStatus;
use moot_core::text::plural;
use moot_store::Store;

use crate::flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark's name (`moot bench --name NAME`).
    name: String,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let status = rt.block_on(BenchStatus::load(store, &args.name))?;
    if args.output.json {
        outln!("{}", moot_core::escape::json(&status.json().to_string()));
        return Ok(());
    }
    let BenchStatus {
        bench,
        worked,
        counts,
        workers,
    } = &status;
    let total = counts.total().max(1);
    outln!(
        "benchmark {} ({} × {}): {}{}",
        bench.name,
        bench.dataset,
        bench.protocols.join(", "),
        plural(counts.total() as usize, "debate"),
        if *worked { " planned" } else { " started" }
    );
    let line = |what: &str, n: u64, note: &str| {
        outln!(
            "  {what:<8} {n:>6}  {:>5.1}%{note}",
            n as f64 * 100.0 / total as f64
        )
    };
    line("done", counts.done, "");
    line("running", counts.running, "");
    if *worked {
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
    if workers.is_empty() {
        if *worked && !counts.settled() {
            outln!(
                "no worker has started: moot work {}",
                moot_app::shell::shell_word(&bench.name)
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
    for s in workers {
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
