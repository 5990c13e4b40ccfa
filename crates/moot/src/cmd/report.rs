//! `moot report`: stored benchmarks read back (nothing is run) as tables in Markdown or JSON and
//! plots of accuracy against tokens and rounds in SVG.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_eval::bench::{load_bench, ItemResult, LoadedBench};
use moot_eval::report::{common_items, BenchInfo, Report};
use moot_eval::Item;
use moot_store::{Store, StoreError};

use crate::input::{bad_input, InputError};
use moot_config::Config;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Markdown,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Benchmark names (the `--run` of `moot bench`). Several are reported together, their
    /// protocols side by side and paired on the items they share; a protocol in more than one
    /// is labelled with its rounds (`som R=2`), or its benchmark when the rounds are the same.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
    /// Report every finished debate, even of items not every protocol finished (by default
    /// such items are left out, and counted, so that protocols are compared on the same items).
    #[arg(long)]
    all_items: bool,
    /// Write the report (report.md or report.json) and its plots (accuracy-vs-tokens.svg, and
    /// accuracy-vs-rounds.svg when a protocol ran more than one round) into this folder, instead
    /// of printing the report.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let mut loaded: Vec<LoadedBench> = Vec::new();
    for name in &args.runs {
        let record = match rt.block_on(store.bench(name)) {
            Ok(r) => r,
            Err(StoreError::BenchNotFound(_)) => {
                return bad_input(format!("no benchmark named {name:?} in the store"))
            }
            Err(e) => return Err(e.into()),
        };
        // The benchmark's decision settings (tie-break, FREE-MAD weights) re-apply its rules.
        let decision = serde_json::from_value::<Config>(record.config.clone())
            .ok()
            .and_then(|c| c.decision().ok())
            .map(|(_, d)| d)
            .unwrap_or_default();
        let bench = rt
            .block_on(load_bench(
                store,
                name,
                &|run| Config::protocol_of_run(&run.config, &run.protocol),
                &decision,
            ))
            .with_context(|| format!("reading benchmark {name}"))?;
        loaded.push(bench);
    }
    let (infos, results, items) = combine(loaded)?;
    if results.is_empty() {
        return bad_input(format!(
            "{} has no finished debate yet",
            args.runs.join(", ")
        ));
    }
    let (results, left_out) = if args.all_items {
        (results, 0)
    } else {
        common_items(results)
    };
    if results.is_empty() {
        return bad_input(
            "no item was finished under every protocol; --all-items reports them anyway",
        );
    }
    if left_out > 0 {
        let them = if left_out == 1 { "it" } else { "them" };
        eprintln!(
            "{} left out: not every protocol has finished {them} (--all-items keeps {them})",
            moot_core::text::plural(left_out, "item")
        );
    }
    let mut report = Report::new(infos, &results, &items);
    report.left_out = left_out;
    match &args.out {
        None => print!("{}", render(&report, args.format, &[])?),
        Some(dir) => write_report(&report, args.format, dir)?,
    }
    Ok(())
}

/// The report in `format`, embedding `plots` (Markdown only).
fn render(report: &Report, format: Format, plots: &[(&str, &str)]) -> Result<String> {
    Ok(match format {
        Format::Markdown => report.markdown(plots),
        Format::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(report).context("serialising the report")?
        ),
    })
}

fn write_report(report: &Report, format: Format, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut plots: Vec<(&str, &str, String)> = vec![(
        "accuracy against tokens per item",
        "accuracy-vs-tokens.svg",
        report.accuracy_vs_tokens_svg()?,
    )];
    if report.has_rounds() {
        plots.push((
            "plurality accuracy by round",
            "accuracy-vs-rounds.svg",
            report.accuracy_vs_rounds_svg()?,
        ));
    }
    for (_, file, svg) in &plots {
        let path = dir.join(file);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    let links: Vec<(&str, &str)> = plots.iter().map(|(c, f, _)| (*c, *f)).collect();
    let file = match format {
        Format::Markdown => "report.md",
        Format::Json => "report.json",
    };
    let path = dir.join(file);
    std::fs::write(&path, render(report, format, &links)?)
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Several benchmarks as one: protocols keep their names unless two benchmarks ran the same one.
fn combine(loaded: Vec<LoadedBench>) -> Result<(Vec<BenchInfo>, Vec<ItemResult>, Vec<Item>)> {
    let rounds_of = |b: &LoadedBench, p: &str| -> Option<usize> {
        b.results
            .iter()
            .filter(|r| r.protocol == p)
            .filter_map(|r| r.result.transcript.trajectory())
            .map(|t| t.rounds().saturating_sub(1))
            .max()
    };
    let mut infos = Vec::new();
    let mut results: Vec<ItemResult> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    for b in &loaded {
        for p in &b.record.protocols {
            let holders: Vec<&LoadedBench> = loaded
                .iter()
                .filter(|o| o.record.protocols.contains(p))
                .collect();
            let label = if holders.len() < 2 {
                p.clone()
            } else {
                let mine = rounds_of(b, p);
                let clash = holders
                    .iter()
                    .filter(|o| o.record.name != b.record.name)
                    .any(|o| rounds_of(o, p) == mine);
                match mine {
                    Some(r) if !clash => format!("{p} R={r}"),
                    _ => format!("{p} ({})", b.record.name),
                }
            };
            for r in b.results.iter().filter(|r| &r.protocol == p) {
                results.push(ItemResult {
                    protocol: label.clone(),
                    ..r.clone()
                });
            }
        }
        for item in &b.items {
            match items.iter().find(|i| i.id == item.id) {
                Some(seen) if seen.gold != item.gold => {
                    return Err(InputError(format!(
                        "item {} has gold {:?} in one benchmark and {:?} in {}: they are not the same dataset",
                        item.id, seen.gold, item.gold, b.record.name
                    ))
                    .into())
                }
                Some(_) => {}
                None => items.push(item.clone()),
            }
        }
        infos.push(BenchInfo {
            name: b.record.name.clone(),
            dataset: b.record.dataset.clone(),
            seed: b.record.seed,
            limit: b.record.limit,
            protocols: b.record.protocols.clone(),
            items: b.items.len(),
            unfinished: b.unfinished,
        });
    }
    Ok((infos, results, items))
}
