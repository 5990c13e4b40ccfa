//! A benchmark from the command line: a progress bar per protocol on stderr while it runs
//! (`moot bench`, `moot resume` of a benchmark), then its report on stdout. What runs is
//! `moot_app::benchmark`'s.

use anyhow::Result;
use moot_app::benchmark::{BenchEvents, BenchRequest, Benchmarked, Prepared};
use moot_core::text::plural;
use moot_eval::bench::ItemResult;
use moot_eval::controls::SamplesForBudget;
use moot_store::Store;

/// Runs (or resumes) the benchmark `request` describes and prints its report (with its
/// self-consistency arm's, under `--sc-at-budget`: see `moot_app::benchmark::run`); with
/// `detach`, only records its plan for `moot work`.
pub fn run_benchmark(
    request: BenchRequest,
    detach: bool,
    json: bool,
    strict: bool,
    store: &dyn Store,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    if detach {
        let prepared = rt.block_on(Prepared::new(&request, None, store, &mut |m| errln!("{m}")))?;
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
    print_report(&done, json)?;
    tell_failed_calls(&done.report, strict)
}

/// Failed calls are in the report; said on standard error too, where a script's log sees
/// them whatever the format, and with `--strict` they fail the command.
pub fn tell_failed_calls(report: &moot_eval::report::Report, strict: bool) -> Result<()> {
    let failed: Vec<String> = report
        .protocols
        .iter()
        .filter(|p| p.failed_calls > 0)
        .map(|p| {
            let agents: Vec<String> = p
                .failed_agents
                .iter()
                .map(|(id, debates)| format!("{id} in {}", plural(*debates, "debate")))
                .collect();
            format!(
                "{} {} ({})",
                p.protocol,
                plural(p.failed_calls, "call"),
                agents.join(", ")
            )
        })
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    let line = format!(
        "calls failed (no response after their retries), by protocol: {}; the report names each error",
        failed.join(", ")
    );
    if strict {
        anyhow::bail!("--strict: {line}; the benchmark is stored");
    }
    errln!("moot: warning: {}", moot_core::escape::terminal(&line));
    Ok(())
}

/// What `moot bench` shows while it runs: a progress bar per protocol on stderr, and what is
/// starting.
struct Shown {
    json: bool,
    progress: Option<BenchProgress>,
}

impl BenchEvents for Shown {
    fn message(&mut self, message: &str) {
        match &self.progress {
            Some(progress) => progress.meter.suspend(|| errln!("{message}")),
            None => errln!("{message}"),
        }
    }

    fn started(&mut self, prepared: &Prepared) {
        crate::going_on::resume(&prepared.name);
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
            &prepared.name,
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
        if let Some(mut progress) = self.progress.take() {
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

/// The benchmark's report as JSON (`Benchmarked::json`), or as Markdown tables with the wall
/// time and throughput.
fn print_report(done: &Benchmarked, json: bool) -> Result<()> {
    if json {
        outln!("{}", moot_core::escape::json(&done.json()?.to_string()));
        return Ok(());
    }
    let throughput = &done.throughput;
    out!(
        "{}",
        crate::terminal::shown(&done.report, &done.report.markdown(&[]))
    );
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
    meter: super::meter::Meter,
    /// Per protocol: debates finished, correct, output tokens.
    tally: Vec<(usize, usize, u64)>,
}

impl BenchProgress {
    fn new(name: &str, protocols: &[String], items: usize, hidden: bool) -> BenchProgress {
        let rows: Vec<(String, Option<u64>)> = protocols
            .iter()
            .map(|p| (p.clone(), Some(items as u64)))
            .collect();
        BenchProgress {
            protocols: protocols.to_vec(),
            meter: super::meter::Meter::new(&format!("benchmark {name}"), &rows, hidden),
            tally: vec![(0, 0, 0); protocols.len()],
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
        if let Some(bar) = self.meter.bar(i) {
            bar.inc(1);
            bar.set_message(format!("accuracy {}/{} · {} output tokens", t.1, t.0, t.2));
        }
    }

    fn clear(&mut self) {
        self.meter.finish();
    }
}
