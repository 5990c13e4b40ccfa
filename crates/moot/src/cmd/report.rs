//! `moot report`: stored benchmarks read back (nothing is run) as tables in Markdown or JSON and
//! plots of accuracy against tokens and rounds in SVG.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_eval::report::Report;
use moot_store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Markdown,
    Json,
    /// Each debate as one JSON line (item, gold, each round's answers, decision, correct), as
    /// lm-evaluation-harness's `--log_samples` writes them.
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Benchmark names (the `--name` of `moot bench`). Several are reported together, their
    /// protocols side by side and paired on the items they share; a protocol in more than one
    /// is labelled with its rounds (`som R=2`), or its benchmark when the rounds are the same.
    #[arg(required = true, value_name = "BENCH")]
    runs: Vec<String>,
    /// The report's form (default: on a terminal, a summary and the tables aligned to its
    /// width; elsewhere Markdown).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Report every finished debate, even of items not every protocol finished (by default
    /// such items are left out, and counted, so that protocols are compared on the same items).
    #[arg(long)]
    all_items: bool,
    /// Write the report (report.md or report.json) and its plots (accuracy-vs-tokens.svg, and
    /// accuracy-vs-rounds.svg when a protocol ran more than one round) into this folder, instead
    /// of printing the report.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    if args.format == Some(Format::Jsonl) {
        return samples(&args, store, rt);
    }
    let report = rt.block_on(moot_app::bench_report::report(
        store,
        &args.runs,
        args.all_items,
        moot_config::Via::Cli,
    ))?;
    if report.left_out > 0 {
        let them = if report.left_out == 1 { "it" } else { "them" };
        errln!(
            "{} left out: not every protocol has finished {them} (--all-items keeps {them})",
            moot_core::text::plural(report.left_out, "item")
        );
    }
    match (&args.out, args.format) {
        (Some(dir), format) => write_report(&report, format.unwrap_or(Format::Markdown), dir)?,
        // No form asked: for the terminal when there is one, else Markdown.
        (None, None) => out!("{}", crate::terminal::shown(&report, &report.markdown(&[]))),
        // JSON escapes control characters itself.
        (None, Some(Format::Json)) => out!("{}", render(&report, Format::Json, &[])?),
        (None, Some(format)) => out!(
            "{}",
            moot_core::escape::terminal(&render(&report, format, &[])?)
        ),
    }
    Ok(())
}

/// `--format jsonl`: each reported debate as a JSON line, printed or written to
/// DIR/samples.jsonl.
fn samples(args: &Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let rows = rt.block_on(moot_app::bench_report::samples(
        store,
        &args.runs,
        args.all_items,
        moot_config::Via::Cli,
    ))?;
    let mut text = String::new();
    for row in rows {
        text.push_str(&row.to_string());
        text.push('\n');
    }
    match &args.out {
        None => out!("{}", moot_core::escape::json(&text)),
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join("samples.jsonl");
            moot_files::write_output(&path, text)?;
            errln!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// The report in `format`, embedding `plots` (Markdown only).
fn render(report: &Report, format: Format, plots: &[(&str, &str)]) -> Result<String> {
    Ok(match format {
        Format::Markdown => report.markdown(plots),
        Format::Json | Format::Jsonl => format!(
            "{}\n",
            moot_core::escape::json(
                &serde_json::to_string_pretty(report).context("serialising the report")?
            )
        ),
    })
}

fn write_report(report: &Report, format: Format, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let plots = moot_app::bench_report::plots(report)?;
    for (_, file, svg) in &plots {
        let path = dir.join(file);
        moot_files::write_output(&path, svg)?;
        errln!("wrote {}", path.display());
    }
    let links: Vec<(&str, &str)> = plots.iter().map(|(c, f, _)| (*c, *f)).collect();
    let file = match format {
        Format::Markdown => "report.md",
        Format::Json | Format::Jsonl => "report.json",
    };
    let path = dir.join(file);
    moot_files::write_output(&path, render(report, format, &links)?)?;
    errln!("wrote {}", path.display());
    Ok(())
}
