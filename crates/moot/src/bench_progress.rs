//! Running benchmarks from the command line: progress bars on stderr, the report or a
//! worker's summary on stdout, and SIGINT/SIGTERM as a worker's signal to stop. What runs is
//! `moot_app::benchmark`'s.

use anyhow::{Context, Result};
use moot_app::benchmark::{
    BenchEvents, BenchRequest, Benchmarked, ForWorker, Prepared, WorkRequest,
};
use moot_core::text::plural;
use moot_eval::bench::ItemResult;
use moot_eval::controls::SamplesForBudget;
use moot_store::{JobCounts, Store};

/// Runs (or resumes) the benchmark `request` describes and prints its report (with its
/// self-consistency arm's, under `--sc-at-budget`: see `moot_app::benchmark::run`); with
/// `detach`, only records its plan for `moot work`.
pub fn run(
    request: BenchRequest,
    detach: bool,
    json: bool,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    if detach {
        let prepared = rt.block_on(Prepared::new(&request, None, &mut |m| errln!("{m}")))?;
        let (name, dataset) = (&prepared.name, &prepared.dataset);
        let (planned, added) =
            rt.block_on(prepared.plan_for_workers(store, request.concurrency))?;
        if json {
            outln!(
                "{}",
                serde_json::json!({"bench": name, "planned": planned, "added": added})
            );
        } else {
            outln!(
                "benchmark {name}: {} of {dataset} × {} planned ({} new); start workers with: moot work {}",
                plural(planned as usize, "debate"),
                prepared.protocols.join(", "),
                added,
                moot_app::shell::shell_word(name)
            );
        }
        return Ok(());
    }
    let mut shown = Shown {
        json,
        progress: None,
    };
    let done = rt.block_on(moot_app::benchmark::run(&request, store, &mut shown))?;
    print_report(&done, json)
}

/// What `moot bench` shows while it runs: a progress bar per protocol on stderr, and what is
/// starting.
struct Shown {
    json: bool,
    progress: Option<BenchProgress>,
}

impl BenchEvents for Shown {
    fn message(&mut self, message: &str) {
        errln!("{message}");
    }

    fn started(&mut self, prepared: &Prepared) {
        if !self.json {
            errln!(
                "benchmark {}: {} of {} × {}",
                prepared.name,
                plural(prepared.items.len(), "item"),
                prepared.dataset,
                prepared.protocols.join(", ")
            );
        }
        self.progress = Some(BenchProgress::new(
            &prepared.protocols,
            prepared.items.len(),
            self.json,
        ));
    }

    fn result(&mut self, result: &ItemResult, correct: bool) {
        if let Some(progress) = &mut self.progress {
            progress.finished(
                &result.protocol,
                correct,
                result.result.usage().output_tokens,
            );
        }
    }

    fn ended(&mut self) {
        if let Some(progress) = self.progress.take() {
            progress.clear();
        }
    }

    fn arm(&mut self, need: &SamplesForBudget) {
        if !self.json {
            errln!(
                "--sc-at-budget: {} costs {:.0} tokens per item and a sample about {:.0}; cot-sc with {} samples follows",
                need.protocol,
                need.budget,
                need.per_sample,
                need.samples
            );
        }
    }
}

/// Forks every debate of a stored benchmark (`moot bench --fork-of`) and prints the fork
/// benchmark's report, paired with its parent's; protocols and items left out are said on
/// stderr (and listed in the JSON).
pub fn fork(
    request: moot_app::bench_fork::BenchForkRequest,
    json: bool,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    let spinner = if json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    let (mut forked, mut read) = (0usize, 0usize);
    let started = std::time::Instant::now();
    let done = rt.block_on(moot_app::bench_fork::run(
        store,
        &request,
        &mut |protocol, new| {
            if new {
                forked += 1;
            } else {
                read += 1;
            }
            spinner.set_message(format!(
                "{forked} forked, {read} read back · last: {protocol}"
            ));
            spinner.tick();
        },
        &mut |m| spinner.suspend(|| errln!("{}", moot_core::escape::terminal(m))),
    ))?;
    spinner.finish_and_clear();
    if !json {
        errln!(
            "benchmark {}: fork of {} at round {}; {} forked, {} read back",
            done.name,
            done.parent,
            request.round,
            done.forked,
            done.read_back
        );
        for (protocol, reason) in &done.refused {
            errln!(
                "{protocol} left out: {}",
                moot_core::escape::terminal(reason)
            );
        }
        for l in &done.left_out {
            errln!(
                "{} {} left out: {}",
                l.protocol,
                l.item_id,
                moot_core::escape::terminal(&l.reason)
            );
        }
    }
    let report = rt.block_on(moot_app::bench_report::report(
        store,
        std::slice::from_ref(&done.name),
        false,
        moot_config::Via::Cli,
    ))?;
    if json {
        let mut value = serde_json::to_value(&report).context("serialising the report")?;
        value["fork_run"] = serde_json::to_value(&done).context("serialising the report")?;
        value["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
        outln!("{value}");
    } else {
        out!("{}", moot_core::escape::terminal(&report.markdown(&[])));
    }
    Ok(())
}

/// Works the planned benchmark `record` as one of any number of workers and prints the
/// worker's summary; a worker stopped by a signal fails, so that a scheduler starts another.
pub fn work(
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

/// The benchmark's report as JSON (`Benchmarked::json`), or as Markdown tables with the wall
/// time and throughput.
fn print_report(done: &Benchmarked, json: bool) -> Result<()> {
    if json {
        outln!("{}", done.json()?);
        return Ok(());
    }
    let throughput = &done.throughput;
    out!("{}", done.report.markdown(&[]));
    outln!(
        "\nwall {:.1} s · {} calls in {} debates · {:.0} calls/s · {:.0} µs/call",
        throughput.seconds,
        throughput.calls,
        throughput.debates,
        throughput.calls_per_second,
        throughput.us_per_call
    );
    if throughput.reused_debates > 0 {
        outln!(
            "({} debates read back or resumed from the store)",
            throughput.reused_debates
        );
    }
    Ok(())
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
        t.2 = t.2.saturating_add(output_tokens);
        self.bars[i].inc(1);
        self.bars[i].set_message(format!("accuracy {}/{} · {} output tokens", t.1, t.0, t.2));
    }

    fn clear(&self) {
        for bar in &self.bars {
            bar.finish_and_clear();
        }
    }
}
